"""Rust's module tree, read with a real parser (tree-sitter-rust), and its unit tests put back.

Unit tests live in `#[cfg(test)]` modules inside the source files a fix edits, so no path rule can
protect them. What identifies a test is its module path (`src/lib.rs::wrap::tests::name`), not the
file or the text it is in: a patch can move `src/wrap.rs` to `src/wrap/mod.rs`, point a module
elsewhere with `#[path]`, or write a decoy `#[cfg(test)] mod tests {}` in a comment or a string.
So the tree is read as rustc reads it, from the crate roots:

- every `.rs` file is parsed with tree-sitter-rust (comments and strings are tokens of their own,
  never items);
- `mod x;` resolves as rustc resolves it: `x.rs` or `x/mod.rs` in the folder of a mod-rs file
  (lib.rs, main.rs, mod.rs, or a file reached through `#[path]`), in `<stem>/` for any other file,
  below the inline modules around it; `#[path = "p"]` relative to the file's folder (inside inline
  modules, to the folder they stand for);
- the crate roots are the files no `mod` item resolves to (lib.rs, main.rs, bin/, tests/, build.rs).

`put_back_tests(before, after)` then makes every `#[cfg(test)]` module of `before` (the tree the
patch was applied to) be in `after` exactly as it was, where `after`'s module tree puts its module
path: an inline module's item is written again in place of whatever the patch made of it (an
edited module, a `mod tests;` pointing elsewhere) or added to its parent when the patch removed it;
a test module of its own file (`#[cfg(test)] mod tests;`) has its declaration put back and every
file of its subtree restored as it was, wherever `after` resolves them. A test module the patch
adds as a file of its own (`#[cfg(test)] mod x;` that `before` does not have) is refused: its
declaration is removed. The modules on the way to a test module keep their declarations as they
were: a second declaration of one (cfg alternatives: `#[cfg(test)] #[path = "evil.rs"] mod wrap;`
beside `#[cfg(not(test))] mod wrap;`) is removed, and changed attributes (`#[cfg_attr(test, path =
...)]`) are put back. A `macro_rules!` or `use` the patch adds under the name of a macro the test
modules invoke is removed (defined before their module, it shadows `assert!` in textual scope).
The rest of the patch's changes to these files are kept (restoring whole files would revert a fix
in them).

Limits: modules made by macros (`macro_rules!` expanding to a `mod`) are not followed; `#[test]`
functions outside a `#[cfg(test)]` module are not put back; code that is compiled differently for
test builds (`#[cfg(test)]` items or `cfg!(test)` in the code under test) is code under test,
running in the test binary (docs/grading.md, known limits).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache

import tree_sitter_rust
from tree_sitter import Language, Node, Parser

_RUST = Language(tree_sitter_rust.language())
Key = tuple[str, ...]  # the crate root's file, then the module names


@dataclass
class Module:
    key: Key
    file: str  # the file holding the `mod` item
    start: int  # byte span of the item, its outer attributes included
    end: int
    test: bool  # the item itself is `#[cfg(...)]` with `test` in the predicate (not `not(test)`)
    inline: bool  # `mod x { ... }` (else `mod x;`)
    children_at: int | None  # inline: where an item is added inside it (before its closing brace)
    header_end: int = 0  # the end of its declaration: its body's `{` (inline), else `end`
    candidates: tuple[str, ...] = ()  # `mod x;`: the files it may resolve to, in rustc's order
    target: str | None = None  # `mod x;`: the file it resolves to (None: no such file)


@lru_cache(maxsize=512)
def _parse(text: bytes) -> Node:
    return Parser(_RUST).parse(text).root_node


def _text(node: Node) -> str:
    return (node.text or b"").decode("utf-8", "replace")


def _attribute(item: Node) -> tuple[str, Node | None, Node | None]:
    """An attribute_item's name, its arguments (token tree) and its `= value`."""
    attr = next((c for c in item.named_children if c.type == "attribute"), None)
    if attr is None:
        return "", None, None
    name = _text(attr.named_children[0]) if attr.named_children else ""
    return name, attr.child_by_field_name("arguments"), attr.child_by_field_name("value")


_TEST = re.compile(r"(?<![\w\"])test(?![\w\"])")
_NOT_TEST = re.compile(r"not\s*\(\s*test\s*\)")


def _is_cfg_test(item: Node) -> bool:
    name, args, _ = _attribute(item)
    if name != "cfg" or args is None:
        return False
    text = _text(args)
    return bool(_TEST.search(_NOT_TEST.sub("", text)))


def _path_value(item: Node) -> str | None:
    name, _, value = _attribute(item)
    if name != "path" or value is None or value.type not in ("string_literal", "raw_string_literal"):
        return None
    content = "".join(_text(c) for c in value.named_children if c.type == "string_content")
    return content


def _norm(folder: str, path: str) -> str | None:
    joined = posixpath.normpath(posixpath.join(folder, path))
    return None if joined.startswith("../") or joined in ("..", ".") or posixpath.isabs(joined) else joined


def module_tree(files: Mapping[str, bytes], roots: Iterable[str]) -> dict[Key, Module]:
    """Every module item reachable from `roots` (repository-relative paths of crate roots), by key
    (the root, then the module names); a key seen twice keeps its first item (rustc refuses it)."""
    return _items(files, roots)[0]


def _items(files: Mapping[str, bytes], roots: Iterable[str]) -> tuple[dict[Key, Module], list[Module]]:
    """`module_tree`, and the items that declare a module a second time (cfg alternatives:
    `#[cfg(not(test))] mod wrap;` and `#[cfg(test)] #[path = "other.rs"] mod wrap;`)."""
    out: dict[Key, Module] = {}
    more: list[Module] = []
    for root in roots:
        if root in files:
            _walk_file(files, root, (root,), posixpath.dirname(root), True, out, {root}, more)
    return out, more


def _walk_file(
    files: Mapping[str, bytes], path: str, key: Key, folder: str, mod_rs: bool, out: dict, seen: set, more: list
) -> None:
    children = folder if mod_rs else path[: -len(".rs")] if path.endswith(".rs") else path
    _walk_items(files, path, _parse(files[path]), key, children, folder, out, seen, more)


def _walk_items(
    files: Mapping[str, bytes],
    path: str,
    container: Node,
    key: Key,
    children: str,  # the folder `mod x;` files are looked for in
    path_base: str,  # the folder `#[path]` is relative to
    out: dict,
    seen: set,
    more: list,
) -> None:
    attrs: list[Node] = []
    for node in container.named_children:
        if node.type == "attribute_item":
            attrs.append(node)
            continue
        if node.type in ("line_comment", "block_comment"):
            continue
        if node.type == "mod_item" and (name_node := node.child_by_field_name("name")) is not None:
            name = _text(name_node)
            mkey = key + (name,)
            start = attrs[0].start_byte if attrs else node.start_byte
            test = any(_is_cfg_test(a) for a in attrs)
            body = node.child_by_field_name("body")
            if mkey in out:
                header_end = body.start_byte if body is not None else node.end_byte
                more.append(Module(mkey, path, start, node.end_byte, test, body is not None, None, header_end))
            elif body is not None:
                out[mkey] = Module(mkey, path, start, node.end_byte, test, True, body.end_byte - 1, body.start_byte)
                sub = posixpath.join(children, name)
                _walk_items(files, path, body, mkey, sub, sub, out, seen, more)
            else:
                given = next((v for a in attrs if (v := _path_value(a)) is not None), None)
                if given is not None:
                    candidates = tuple(p for p in (_norm(path_base, given),) if p)
                else:
                    candidates = tuple(
                        p for p in (_norm(children, name + ".rs"), _norm(children, name + "/mod.rs")) if p
                    )
                target = next((c for c in candidates if c in files), None)
                out[mkey] = Module(
                    mkey, path, start, node.end_byte, test, False, None, node.end_byte, candidates, target
                )
                if target is not None and target not in seen:
                    mod_rs = given is not None or posixpath.basename(target) == "mod.rs"
                    _walk_file(files, target, mkey, posixpath.dirname(target), mod_rs, out, seen | {target}, more)
        attrs = []


def crate_roots(files: Mapping[str, bytes]) -> list[str]:
    """The files of `files` that no `mod` item resolves to, sorted: the crate roots (lib.rs,
    main.rs, bin/*.rs, tests/*.rs, build.rs, ...)."""
    targets: set[str] = set()
    for path in files:  # each file read as a root of its own, then what the real roots reach
        targets |= {m.target for m in module_tree(files, [path]).values() if m.target and m.target != path}
    roots = sorted(set(files) - targets)
    reached = {m.target for m in module_tree(files, roots).values() if m.target}
    return [r for r in roots if r not in reached]


def _topmost_tests(tree: dict[Key, Module]) -> list[Module]:
    return [
        m for k, m in tree.items() if m.test and not any(k[:i] in tree and tree[k[:i]].test for i in range(2, len(k)))
    ]


def _subtree_files(tree: dict[Key, Module], key: Key) -> dict[Key, str]:
    """The files the modules at and below `key` live in, by module key."""
    return {k: m.target for k, m in tree.items() if k[: len(key)] == key and m.target is not None}


def complete(files: dict[str, bytes], roots: list[str], read: Callable[[str], bytes | None]) -> None:
    """Add to `files` what `read` finds of the files `mod` items resolve to that `files` lacks (a
    file in a folder reached through a symlink, which a listing of the tree does not follow)."""
    tried: set[str] = set()
    while True:
        missing = [
            c
            for m in module_tree(files, roots).values()
            if not m.inline and m.target is None
            for c in m.candidates
            if c not in tried
        ]
        if not missing:
            return
        for path in missing:
            tried.add(path)
            data = read(path)
            if data is not None:
                files[path] = data


def put_back_tests(
    before: Mapping[str, bytes], after: Mapping[str, bytes], read: Callable[[str], bytes | None] = lambda _: None
) -> tuple[dict[str, bytes], list[tuple[str, str]]]:
    """The files of `after` to write so that every `#[cfg(test)]` module of `before` is in it as it
    was, and test modules of their own new files are refused (see the module's docstring); and what
    was done, as (path, what) pairs. `before` and `after` hold every `.rs` file of the repository;
    `read(path)` reads one of `after` a listing missed (None: there is none)."""
    roots = crate_roots(before)
    ref = module_tree(before, roots)
    now = dict(after)
    complete(now, roots, read)
    after = dict(now)
    done: list[tuple[str, str]] = []
    for _ in range(100):  # one change at a time (offsets move), until the declarations are as they were
        change = _declarations_as_before(before, ref, roots, now)
        if change is None:
            break
        done.append(change)
    for test in _topmost_tests(ref):
        what = f"#[cfg(test)] mod {test.key[-1]}"
        item = before[test.file][test.start : test.end]
        where = _put_item(now, roots, test.key, item)
        if where:
            done.append((where, what))
        if not test.inline:  # its own file, and those of its submodules, as they were
            for _ in range(8):  # a restored file can declare modules of its own: until nothing changes
                tree = module_tree(now, roots)
                changed = False
                for key, old_file in _subtree_files(ref, test.key).items():
                    module = tree.get(key)
                    if module is None:
                        continue
                    path = module.target or (module.candidates[0] if module.candidates else None)
                    if path is not None and now.get(path) != before[old_file]:
                        now[path] = before[old_file]
                        done.append((path, what))
                        changed = True
                if not changed:
                    break
    tree = module_tree(now, roots)
    known = {m.target for m in ref.values() if m.target}
    for module in sorted(_topmost_tests(tree), key=lambda m: -m.start):  # from the end: spans stay valid
        if module.key in ref or module.inline or module.target is None or module.target in known:
            continue
        text = now[module.file]
        now[module.file] = text[: module.start] + text[module.end :]
        done.append((module.file, f"#[cfg(test)] mod {module.key[-1]}; (a new test module file, refused)"))
    done += _refuse_new_macros(before, ref, now)
    changed_files = {p: t for p, t in now.items() if after.get(p) != t}
    return changed_files, list(dict.fromkeys(done))


def _descendants(node: Node, kinds: tuple[str, ...]) -> Iterable[Node]:
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type in kinds:
            yield current
        stack.extend(reversed(current.children))


def _macros_the_tests_use(before: Mapping[str, bytes], ref: dict[Key, Module]) -> set[str]:
    """The names of the macros the test modules of `ref` invoke (`assert_eq`, a crate's `check`)."""
    spans: dict[str, list[tuple[int, int]]] = {}
    for test in _topmost_tests(ref):
        spans.setdefault(test.file, []).append((test.start, test.end))
        for path in _subtree_files(ref, test.key).values():
            spans.setdefault(path, []).append((0, len(before[path])))
    names: set[str] = set()
    for path, ranges in spans.items():
        for call in _descendants(_parse(before[path]), ("macro_invocation",)):
            macro = call.child_by_field_name("macro")
            if macro is not None and any(a <= call.start_byte < b for a, b in ranges):
                name = macro.child_by_field_name("name") if macro.type == "scoped_identifier" else macro
                names.add(_text(name) if name is not None else "")
    return names - {""}


def _macro_items(text: bytes, used: set[str]) -> list[tuple[int, int, str]]:
    """The `macro_rules!` definitions and `use` declarations of a file that name a macro of `used`."""
    found = []
    for node in _descendants(_parse(text), ("macro_definition", "use_declaration")):
        if node.type == "macro_definition":
            name_node = node.child_by_field_name("name")
            names = {_text(name_node)} if name_node is not None else set()
        else:
            argument = node.child_by_field_name("argument")
            names = _imported(argument) if argument is not None else set()
        for name in sorted(names & used):
            found.append((node.start_byte, node.end_byte, name))
            break
    return found


def _imported(node: Node) -> set[str]:
    """The names a `use` brings into scope (the last segment, or the alias), not its path's."""
    if node.type == "use_as_clause":
        alias = node.child_by_field_name("alias")
        return {_text(alias)} if alias is not None else set()
    if node.type == "identifier":
        return {_text(node)}
    if node.type == "scoped_identifier":
        name = node.child_by_field_name("name")
        return {_text(name)} if name is not None else set()
    if node.type == "scoped_use_list":
        inner = node.child_by_field_name("list")
        return _imported(inner) if inner is not None else set()
    if node.type == "use_list":
        return {n for child in node.named_children for n in _imported(child)}
    return set()


def _refuse_new_macros(before: Mapping[str, bytes], ref: dict[Key, Module], files: dict[str, bytes]) -> list:
    """A macro the unit tests invoke can be shadowed in textual scope by a `macro_rules!` of the
    same name defined before their module (`macro_rules! assert_eq { ($($t:tt)*) => {} }` at the
    top of lib.rs), or by a `use` that imports one under that name. Such a definition or `use` that
    the tree before did not have (the same text, in the same file) is removed."""
    used = _macros_the_tests_use(before, ref)
    done = []
    for path in sorted(files):
        text = files[path]
        if not used or text == before.get(path):
            continue
        old = before.get(path, b"")
        known = [old[a:b] for a, b, _ in _macro_items(old, used)] if old else []
        for start, end, name in sorted(_macro_items(text, used), reverse=True):
            item = text[start:end]
            if item in known:
                known.remove(item)
                continue
            text = text[:start] + text[end:]
            done.append((path, f"{name}! (named like a macro the unit tests use, defined anew: refused)"))
        files[path] = text
    return done


def _declarations_as_before(
    before: Mapping[str, bytes], ref: dict[Key, Module], roots: list[str], files: dict[str, bytes]
) -> tuple[str, str] | None:
    """One change that makes the modules on the way to a test module of `ref` declared in `files`
    as they were: a second declaration of one of them (cfg alternatives, `#[cfg(test)] #[path =
    "other.rs"] mod wrap;` beside the real one) removed, or a declaration whose attributes changed
    (`#[cfg_attr(test, path = ...)]`, a new `#[path]`) put back; None when there is none left."""
    guarded = {t.key[:i] for t in _topmost_tests(ref) for i in range(2, len(t.key) + 1)}
    ref_more = {m.key for m in _items(before, roots)[1]}
    first, more = _items(files, roots)
    for extra in more:
        key = extra.key
        if key not in guarded or key in ref_more or key not in first:
            continue
        was = before[ref[key].file][ref[key].start : ref[key].header_end]
        # the one declared as before stays; when neither is, the first (put back as it was next)
        victim = first[key] if files[extra.file][extra.start : extra.header_end] == was else extra
        text = files[victim.file]
        files[victim.file] = text[: victim.start] + text[victim.end :]
        return victim.file, f"mod {key[-1]} (a second declaration, refused)"
    for key in sorted(guarded):
        if key not in first or key not in ref or ref[key].test:
            continue  # the test modules themselves are put back whole
        now, was_module = first[key], ref[key]
        was = before[was_module.file][was_module.start : was_module.header_end]
        text = files[now.file]
        if text[now.start : now.header_end] != was:
            files[now.file] = text[: now.start] + was + text[now.header_end :]
            return now.file, f"mod {key[-1]} (its declaration, as it was)"
    return None


def _put_item(files: dict[str, bytes], roots: list[str], key: Key, item: bytes) -> str | None:
    """Make the module item at `key` be `item` in `files` (in place of the patch's, or added to
    its parent); the file written, or None when it already was (or its parent is gone)."""
    tree = module_tree(files, roots)
    module = tree.get(key)
    if module is not None:
        text = files[module.file]
        if text[module.start : module.end] == item:
            return None
        files[module.file] = text[: module.start] + item + text[module.end :]
        return module.file
    if len(key) == 2:
        path, at = key[0], len(files.get(key[0], b""))
    else:
        parent = tree.get(key[:-1])
        if parent is None:
            return None  # its parent is gone: the tests under it are missing, which grading sees
        if parent.inline:
            path, at = parent.file, parent.children_at or 0
        elif parent.target is not None:
            path, at = parent.target, len(files[parent.target])
        else:
            return None
    if path not in files:
        return None
    text = files[path]
    files[path] = text[:at].rstrip(b"\n") + b"\n\n" + item + b"\n" + text[at:]
    return path
