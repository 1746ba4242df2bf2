# Sourced by deps.sh and deps-gui.sh: debian_archive prints the address of the Debian archive this
# machine's apt already uses for its release's main component (a mirror or a proxy included), read from
# /etc/apt/sources.list and /etc/apt/sources.list.d (one-line and deb822 formats); the pinned packages
# from the next release are fetched from there. ATTN_DEBIAN_ARCHIVE overrides it.
debian_archive() {
  if [ -n "${ATTN_DEBIAN_ARCHIVE:-}" ]; then echo "$ATTN_DEBIAN_ARCHIVE"; return; fi
  local codename uri
  codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
  uri=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null | awk -v c="$codename" '
    function flush() {
      if (!found && types ~ /(^| )deb( |$)/ && (" " suites " ") ~ (" " c " ") && (" " comps " ") ~ / main /) { print uris; found = 1 }
      types = suites = comps = uris = ""
    }
    /^[ \t]*$/ { flush(); next }
    /^Types:/ { sub(/^Types:[ \t]*/, ""); types = $0 }
    /^URIs:/ { sub(/^URIs:[ \t]*/, ""); uris = $1 }
    /^Suites:/ { sub(/^Suites:[ \t]*/, ""); suites = $0 }
    /^Components:/ { sub(/^Components:[ \t]*/, ""); comps = $0 }
    END { flush() }')
  if [ -z "$uri" ]; then
    uri=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null | sed -E 's/\[[^]]*\]//' |
          awk -v c="$codename" '$1 == "deb" && $3 == c { for (i = 4; i <= NF; i++) if ($i == "main") { print $2; exit } }')
  fi
  if [ -z "$uri" ]; then
    echo "deps: no apt source for Debian $codename main found; set ATTN_DEBIAN_ARCHIVE to the archive's address" >&2
    return 1
  fi
  echo "$uri"
}
