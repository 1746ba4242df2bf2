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

# fetch_source PACKAGE=VERSION SUITE DEST: the source package's upstream tarball from the archive, with
# private apt lists (the system's apt config is left alone), unpacked into DEST (its top folder
# stripped); a stamp file makes it once per version.
fetch_source() {
  local spec=$1 suite=$2 dest=$3 name=${1%%=*} version=${1#*=}
  local stamp="$dest/.stamp-$version" src="$dest-src"
  [ -f "$stamp" ] && return 0
  rm -rf "$src" "$dest" && mkdir -p "$src/lists/partial"
  printf 'Types: deb-src\nURIs: %s\nSuites: %s\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
    "$(debian_archive)" "$suite" > "$src/src.sources"
  local O=(-o Dir::Etc::sourcelist=/dev/null -o "Dir::Etc::sourceparts=$src" -o "Dir::State::Lists=$src/lists"
           -o "Dir::Cache=$src/cache" -o APT::Sandbox::User=root)
  apt-get "${O[@]}" update -qq
  (cd "$src" && apt-get "${O[@]}" source --download-only "$spec")
  mkdir -p "$dest"
  tar -xf "$(ls "$src/${name}"_*.orig.tar.* | head -n 1)" -C "$dest" --strip-components=1
  touch "$stamp"
}
