"""Keyword arguments as attn's command line: `d_model=8` is `--d-model=8`.

Each keyword is the long option of the same name (underscores for dashes); the kind of each option
(a flag, a value, a repeatable value) is the CLI's own (`_attnlab.option_kinds`). Values become the
text the CLI would read: integers in decimal, floats in their shortest round-trip form, paths as
paths, sequences joined with commas for one value or repeated for a repeatable option. Anything else
is a TypeError naming the keyword; an unknown keyword a ValueError naming the command's options.
"""
import functools
import numbers
import os

import numpy as np

from . import _attnlab


@functools.lru_cache(maxsize=None)
def option_kinds(command):
    return _attnlab.option_kinds(command)


def _scalar_text(key, value):
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{key}: expected a number or a string, got a bool ({value!r})")
    if isinstance(value, str):
        if "\0" in value:
            raise ValueError(f"{key}: the text holds a NUL character")
        return value
    if isinstance(value, os.PathLike):
        return _scalar_text(key, os.fspath(value))
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        return repr(float(value))
    raise TypeError(f"{key}: expected a number, a string or a path, got {type(value).__name__}")


def _is_sequence(value):
    return isinstance(value, (list, tuple, np.ndarray, range))


def _value_text(key, value):
    """One option value: a scalar, or a sequence joined with commas ("0.9,0.999", "0.1,1.2")."""
    if _is_sequence(value):
        items = [_value_text(key, v) if _is_sequence(v) else _scalar_text(key, v) for v in value]
        if not items:
            raise ValueError(f"{key}: an empty sequence")
        return ",".join(items)
    return _scalar_text(key, value)


def argv(command, options, renames=None):
    """attn COMMAND's arguments for `options` (keywords; None values are left out). `renames` maps a
    keyword to the option it stands for (sentences -> --sentence)."""
    kinds = option_kinds(command)
    args = [command]
    for key, value in options.items():
        if value is None:
            continue
        name = "--" + (renames or {}).get(key, key).replace("_", "-")
        kind = kinds.get(name, kinds.get(key) == "positional" and "positional")
        if not kind:
            keyword = {v: k for k, v in (renames or {}).items()}
            known = ", ".join(sorted(keyword.get(n, n) for n in (n.removeprefix("--").replace("-", "_") for n in kinds)))
            raise ValueError(f"{command}: no option {key!r} (attn {command} has no {name}); its options: {known}")
        if kind == "positional":
            args.append(_scalar_text(key, value))
        elif kind == "flag":
            if not isinstance(value, (bool, np.bool_)):
                raise TypeError(f"{key} is a flag: give True or False, not {type(value).__name__}")
            if value:
                args.append(name)
        elif kind == "list":
            values = list(value) if _is_sequence(value) else [value]
            if not values:
                raise ValueError(f"{key}: an empty sequence")
            args += [a for v in values for a in _pair(name, _list_item_text(key, v))]
        else:
            args += _pair(name, _value_text(key, value))
    return args


def _pair(name, text):
    # --name=text keeps a value starting with '-' a value; CLI11 reads an empty one after '=' as missing
    # and takes the next argument instead, so "" goes on its own.
    return [f"{name}={text}"] if text else [name, ""]


def _list_item_text(key, value):
    # A repeatable option's item: one text, or (--ids) a sequence of ids separated by spaces.
    if _is_sequence(value):
        return " ".join(_scalar_text(key, v) for v in value)
    return _scalar_text(key, value)
