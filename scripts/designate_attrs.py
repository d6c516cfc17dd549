#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR Apache-2.0
"""Attribute structs are filled by field name: finds positional initializers of rlx_attrs_<Op>
(declarations `rlx_attrs_X a = {...}` and compound literals `(rlx_attrs_X){...}`) and of the
attribute field types (rlx_ilist, rlx_flist, rlx_bytes, rlx_oi64, rlx_of32, rlx_odtype,
rlx_chain) nested in them, using the field order of src/ir/ops.def (or include/rlx/ops.def).

  designate_attrs.py --check FILES...   list every positional initializer; exit 1 if any
  designate_attrs.py --fix FILES...     rewrite them with designators, in place
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NESTED = {  # field type -> member names of its struct
    'ilist': ['v', 'n'], 'flist': ['v', 'n'], 'bytes': ['p', 'n'], 'chain': ['steps', 'n'],
    'oi64': ['has', 'v'], 'of32': ['has', 'v'], 'odtype': ['has', 'v'],
}
TYPE_STRUCT = {'rlx_' + k: v for k, v in NESTED.items()}


def ops_fields():
    for cand in ('include/rlx/ops.def', 'src/ir/ops.def'):
        path = os.path.join(ROOT, cand)
        if os.path.exists(path):
            break
    text = open(path).read()
    text = re.sub(r'/\*.*?\*/', '', text, flags=re.S)
    fields = {}
    for m in re.finditer(r'RLX_OPA\(\s*(\w+)\s*,', text):
        start = m.end()
        depth, i = 1, start
        while depth:
            if text[i] == '(':
                depth += 1
            elif text[i] == ')':
                depth -= 1
            i += 1
        body = text[start:i - 1]
        fl = []
        for f in re.finditer(r'\b(F|E|OE)\(\s*(\w+)\s*,\s*(\w+)', body):
            kind, typ, name = f.groups()
            fl.append((name, typ if kind == 'F' else 'enum'))
        fields[m.group(1)] = fl
    return fields


def split_top(s):
    """Splits s at top-level commas (outside (), {}, [], strings and chars)."""
    parts, depth, cur, i, q = [], 0, '', 0, None
    while i < len(s):
        c = s[i]
        if q:
            cur += c
            if c == '\\':
                cur += s[i + 1]
                i += 1
            elif c == q:
                q = None
        elif c in '"\'':
            q = c
            cur += c
        elif c in '({[':
            depth += 1
            cur += c
        elif c in ')}]':
            depth -= 1
            cur += c
        elif c == ',' and depth == 0:
            parts.append(cur)
            cur = ''
        else:
            cur += c
        i += 1
    if cur.strip():
        parts.append(cur)
    return parts


def match_brace(s, i):
    """Index just past the brace that closes s[i] == '{'."""
    depth, q = 0, None
    while i < len(s):
        c = s[i]
        if q:
            if c == '\\':
                i += 1
            elif c == q:
                q = None
        elif c in '"\'':
            q = c
        elif c == '{':
            depth += 1
        elif c == '}':
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return -1


def designate(inner, names, types):
    """inner: the text between the braces. Returns the rewritten text or None if nothing changes."""
    parts = split_top(inner)
    if not parts or all(p.strip() == '0' for p in parts) and len(parts) == 1:
        return None
    out, changed = [], False
    for k, p in enumerate(parts):
        st = p.replace('\\\n', ' ').strip()  # macro continuation lines
        if st.startswith('.') or st.startswith('['):
            # already designated: only fix nested values
            m = re.match(r'\.(\w+)\s*=\s*(.*)$', st, re.S)
            if m and m.group(2).startswith('{') and m.group(1) in names:
                t = types[names.index(m.group(1))]
                sub = NESTED.get(t)
                if sub:
                    r = designate(m.group(2)[1:-1], sub, [None] * len(sub))
                    if r is not None:
                        out.append('.%s = {%s}' % (m.group(1), r))
                        changed = True
                        continue
            out.append(st)
            continue
        if k >= len(names):
            return None  # more values than fields: leave it to the compiler
        val = st
        t = types[k]
        if t in NESTED and val.startswith('{') and val.endswith('}'):
            r = designate(val[1:-1], NESTED[t], [None] * len(NESTED[t]))
            if r is not None:
                val = '{' + r + '}'
        out.append('.%s = %s' % (names[k], val))
        changed = True
    return ', '.join(out) if changed else None


DECL = re.compile(r'\b(rlx_attrs_(\w+)|rlx_(ilist|flist|bytes|oi64|of32|odtype|chain))\b')


def process(text, fields):
    """Returns (new_text, list of (line, snippet)) for positional initializers."""
    found, res, pos = [], [], 0
    for m in DECL.finditer(text):
        if m.start() < pos:
            continue
        op, nested = m.group(2), m.group(3)
        if op is not None and op not in fields:
            continue
        names = [f[0] for f in fields[op]] if op else NESTED[nested]
        types = [f[1] for f in fields[op]] if op else [None] * len(names)
        j = m.end()
        starts = []
        if j < len(text) and text[j] == ')':  # compound literal (rlx_attrs_X){...}
            k = j + 1
            while k < len(text) and text[k] in ' \t':
                k += 1
            if k < len(text) and text[k] == '{':
                starts.append(k)
        else:  # declarators: name = {...}, name2 = {...};
            k = j
            while True:
                d = re.compile(r'\s*\*?\s*\w+\s*(\[[^\]]*\])?\s*=\s*').match(text, k)
                if not d or d.end() >= len(text) or text[d.end()] != '{':
                    break
                if d.group(1):  # an array of structs: each element is one initializer
                    break
                b = d.end()
                e = match_brace(text, b)
                if e < 0:
                    break
                starts.append(b)
                c = re.compile(r'\s*,').match(text, e)
                if not c:
                    break
                k = c.end()
        for b in starts:
            e = match_brace(text, b)
            if e < 0:
                continue
            r = designate(text[b + 1:e - 1], names, types)
            if r is None:
                continue
            line = text.count('\n', 0, b) + 1
            found.append((line, text[b:e].replace('\n', ' ')[:100]))
            res.append((b, e, '{' + r + '}'))
    out, last = [], 0
    for b, e, r in sorted(res):
        if b < last:
            continue
        out.append(text[last:b])
        out.append(r)
        last = e
    out.append(text[last:])
    return ''.join(out), found


def main():
    if len(sys.argv) < 3 or sys.argv[1] not in ('--check', '--fix'):
        print(__doc__)
        return 2
    fields = ops_fields()
    bad = 0
    for path in sys.argv[2:]:
        text = open(path).read()
        new, found = process(text, fields)
        for line, snip in found:
            bad += 1
            if sys.argv[1] == '--check':
                print('%s:%d: positional initializer %s' % (path, line, snip))
        if sys.argv[1] == '--fix' and new != text:
            open(path, 'w').write(new)
    if sys.argv[1] == '--check':
        print('%d positional attribute initializer%s' % (bad, '' if bad == 1 else 's'))
        return 1 if bad else 0
    print('rewrote %d initializers' % bad)
    return 0


if __name__ == '__main__':
    sys.exit(main())
