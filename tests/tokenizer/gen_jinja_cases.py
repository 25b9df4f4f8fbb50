#!/usr/bin/env python3
"""Regenerates jinja_cases.json: small templates over the Jinja subset with
the text jinja2 renders for them, in the environment transformers'
apply_chat_template uses (ImmutableSandboxedEnvironment, trim_blocks,
lstrip_blocks, loopcontrols, its tojson / raise_exception / strftime_now).
A case whose rendering raises records "error" instead of "rendered".
Needs jinja2 (python3-jinja2). Usage: gen_jinja_cases.py [OUT.json]"""
import datetime
import json
import os
import sys

import jinja2
from jinja2 import nodes
from jinja2.ext import Extension
from jinja2.sandbox import ImmutableSandboxedEnvironment


class AssistantTracker(Extension):
    """{% generation %}: rendered as its body."""
    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return nodes.CallBlock(self.call_method("_render", []), [], [], body).set_lineno(lineno)

    def _render(self, caller):
        return caller()


def make_env():
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(format):
        return datetime.datetime.now().strftime(format)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[AssistantTracker, jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


V = {"messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "Hi  there"}, {"role": "assistant", "content": "Yo", "x": [1, 2]}],
     "n": 7, "f": 2.5, "s": "Héllo, Wörld", "lst": [3, 1, 2, 3], "d": {"b": 2, "a": 1}, "none": None, "t": True, "empty": "",
     "bos_token": "<s>", "eos_token": "</s>", "add_generation_prompt": True, "tools": None}
T = [
 "{{ bos_token }}{% for m in messages %}{{ m.role }}:{{ m['content'] }};{% endfor %}",
 "{% for m in messages %}{{ loop.index }}/{{ loop.index0 }}/{{ loop.revindex }}/{{ loop.revindex0 }}/{{ loop.first }}/{{ loop.last }}/{{ loop.length }} {% endfor %}",
 "{% for m in messages if m.role != 'system' %}{{ m.role }}{{ loop.length }}{% else %}none{% endfor %}",
 "{% for x in [] %}x{% else %}empty{% endfor %}",
 "{% for x in lst %}{% if x == 1 %}{% continue %}{% endif %}{% if loop.index > 3 %}{% break %}{% endif %}{{ x }}{% endfor %}",
 "{% for k, v in d.items() %}{{ k }}={{ v }},{% endfor %}|{% for k in d %}{{ k }}{% endfor %}",
 "{{ lst|length }} {{ s|length }} {{ d|length }} {{ lst|first }} {{ lst|last }} {{ lst|join('-') }} {{ lst|sort|join }} {{ lst|unique|list }} {{ lst|reverse|list }} {{ lst|sum }} {{ lst|min }} {{ lst|max }}",
 "{{ s|upper }} {{ s|lower }} {{ s|title }} {{ 'hello world'|capitalize }} {{ '  x  '|trim }}|{{ 'xxaxx'|trim('x') }} {{ s|replace('l', 'L') }} {{ s|wordcount }}",
 "{{ d|tojson }} {{ lst|tojson }} {{ messages[2]|tojson }} {{ {'k': [1, 2.5, none, true, 'é\"\\n']}|tojson }}",
 "{{ d|tojson(indent=2) }}\n{{ messages|tojson(indent=4) }}",
 "{{ none }} {{ t }} {{ f }} {{ n }} {{ lst }} {{ d }} {{ [1, 'a', none] }} {{ 1.0 }} {{ 1e20 }} {{ 0.1 + 0.2 }} {{ 3 / 2 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ -7 % 3 }} {{ 2 ** 10 }} {{ 1e-5 }} {{ 100000.0 * 3 }}",
 "{{ undefined_var }}|{{ undefined_var is defined }}|{{ none is none }}|{{ n is number }}|{{ s is string }}|{{ d is mapping }}|{{ lst is iterable }}|{{ n is odd }}|{{ n is even }}|{{ n is divisibleby 7 }}|{{ 3 is in lst }}|{{ t is true }}|{{ t is false }}|{{ 'abc' is lower }}",
 "{{ s[0] }}{{ s[-1] }}{{ s[1:4] }}{{ s[::-1] }}{{ lst[1:] }}{{ lst[:-1] }}{{ lst[::2] }}{{ messages[-1].content }}",
 "{{ s.startswith('Hé') }} {{ s.endswith(('x', 'd')) }} {{ s.split(', ') }} {{ ' a  b '.split() }} {{ 'a,b,c'.split(',', 1) }} {{ 'a,b,c'.rsplit(',', 1) }} {{ s.find('l') }} {{ s.count('l') }} {{ '-'.join(['a', 'b']) }} {{ s.replace('l', '', 1) }}",
 "{{ '  \\n x \\n '.strip() }}|{{ '\\nx\\n'.lstrip('\\n') }}|{{ 'x..'.rstrip('.') }}|{{ 'ab'.upper() }}{{ 'AB'.lower() }}|{{ 'a b'.title() }}|{{ '12'.isdigit() }}{{ 'ab'.isalpha() }}",
 "{% set x = 5 %}{% set y = x * 2 + 1 %}{{ y }}{% set z %}block {{ x }}{% endset %}[{{ z }}]",
 "{% set ns = namespace(count=0, names='') %}{% for m in messages %}{% set ns.count = ns.count + 1 %}{% set ns.names = ns.names ~ m.role %}{% endfor %}{{ ns.count }} {{ ns.names }}",
 "{% set c = 'outer' %}{% for i in [1] %}{% set c = 'inner' %}{{ c }}{% endfor %}{{ c }}",
 "{% macro greet(name, punct='!') %}Hello {{ name }}{{ punct }}{% endmacro %}{{ greet('A') }} {{ greet('B', '?') }} {{ greet(name='C', punct='.') }}",
 "{{ 'yes' if t else 'no' }} {{ 'yes' if none else 'no' }} {{ ('a' if false) }}|{{ n > 3 and n < 10 }} {{ not t }} {{ n == 7 or x }} {{ 1 < n < 10 }} {{ 'a' in 'cat' }} {{ 'z' not in 'cat' }} {{ 'a' ~ 1 ~ none }}",
 "{{ range(3)|list }} {{ range(1, 10, 3)|list }} {% for i in range(2) %}{{ i }}{{ loop.cycle('a', 'b') }}{% endfor %}",
 "{{ messages|selectattr('role', 'equalto', 'user')|list|length }} {{ messages|map(attribute='role')|join(',') }} {{ messages|rejectattr('role', 'eq', 'user')|map(attribute='role')|list }} {{ ['a','b']|map('upper')|list }}",
 "{{ x|default('dflt') }} {{ empty|default('e2', true) }} {{ none|default('n') }} {{ '3'|int + 1 }} {{ '2.5'|float }} {{ -3|abs }} {{ 2.567|round(1) }} {{ 5|string ~ 'x' }} {{ d|dictsort }} {{ d|items|list }}",
 "a\n  {% if t %}\n  yes\n  {% endif %}\nb\n{% for i in [1,2] %}\n  - {{ i }}\n{% endfor %}\nend\n",
 "x  {%- if t -%}  Y  {%- endif -%}  z\n{{- ' w ' -}}\n{# comment #}\n   {# c2 #}  q\n{%+ if t %}plus{% endif +%}\nafter",
 "  {% for m in messages %}\n    {{- m.role }}\n  {% endfor %}\n\t{% if t %}tab{% endif %}\n",
 "{{ '<b>'|e }} {{ '<b>'|safe }} {{ 'line1\\nline2'|indent(2) }}|{{ 'l1\\nl2'|indent(2, true) }}",
 "{% if messages[0]['role'] == 'system' %}{% set sys = messages[0]['content'] %}{% set rest = messages[1:] %}{% else %}{% set sys = '' %}{% set rest = messages %}{% endif %}[{{ sys }}]{% for m in rest %}<{{ m.role }}>{% endfor %}",
 "{{ raise_exception('boom') if n > 100 else 'fine' }}",
 "{{ \"dq 'x'\" }} {{ 'sq \\'x\\'' }} {{ 'tab\\there' }} {{ '\\u00e9\\x41' }} {{ 'a' 'b' }} {{ [1,2] + [3] }} {{ 'ab' * 3 }}",
 "{% for a, b in [[1, 2], [3, 4]] %}{{ a + b }}{% endfor %} {{ (1, 2) }} {{ () }} {{ {'a': 1}.get('a') }} {{ {'a': 1}.get('z', 9) }} {{ d.keys()|list }} {{ d.values()|list }}",
 "{{ messages[1].content.split()|length }} {{ messages|length - 1 }} {{ -n|abs }} {{ messages[0].content is string }} {{ messages[2].x[1] }} {{ messages[0].missing is defined }}",
 "{{ 'hello o\'neil-x (y) [z]'|title }} {{ 'hello o\'neil-x (y)'.title() }} {{ '1st place'.title() }} {{ 'ßa'|capitalize }}",
 "{{ raise_exception('boom: ' ~ n) }}",
 "{{ undefined_var.attr }}",
 "{{ messages[0].missing.deeper }}",
 "{{ undefined_fn() }}",
 "{{ n + 'x' }}",
 "{{ 1 / 0 }}",
 "{% for x in none %}{% endfor %}",
 "{% set ns = namespace(a=1) %}{% set ns.a = ns.a + 1 %}{{ ns.a }}{% set d2 = {'k': 1} %}{{ d2.k }}",
 "{{ messages|selectattr('x')|list|length }} {{ messages|selectattr('x', 'defined')|map(attribute='role')|first }} {{ messages|map(attribute='x.1')|list }}",
 "{%- for m in messages -%}\n  {%- if loop.first %}[{% endif -%}\n  {{ m.role }}\n  {%- if not loop.last %}, {% else %}]{% endif -%}\n{%- endfor %}\n",
 "{{- bos_token }}\n{%- if messages[0]['role'] == 'system' %}\n    {%- set system_message = messages[0]['content']|trim %}\n    {%- set messages = messages[1:] %}\n{%- else %}\n    {%- set system_message = \"\" %}\n{%- endif %}\n{{- system_message }}|{{ messages|length }}\n",
 "{{ lst|sort(reverse=true)|join }} {{ messages|sort(attribute='role')|map(attribute='role')|join }} {{ 'ß'|upper }} {{ 'ǅ'|lower }}",
 "{{ 9223372036854775807 }} {{ -9223372036854775808 }} {{ -9223372036854775807 - 1 }} {{ 9_223_372_036_854_775_807 }} {{ (-9223372036854775808) + 1 }}",
]
def main():
    env = make_env()
    out = []
    dest = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "jinja_cases.json")
    for tpl in T:
        try:
            r = env.from_string(tpl).render(**V)
            out.append({"template": tpl, "vars": V, "rendered": r})
        except Exception as e:
            out.append({"template": tpl, "vars": V, "error": f"{type(e).__name__}: {e}"})
    json.dump(out, open(dest, 'w', encoding='utf-8'), ensure_ascii=False, indent=1)
    print(len(out), 'cases', sum('error' in o for o in out), 'errors')


if __name__ == "__main__":
    main()
