#!/usr/bin/env python3
"""Renders each chat template of the given folders (tokenizer_config.json)
with jinja2 as transformers would, over conversations with system prompts,
multi-turn, reasoning, tools and tool calls, and compares `vkllm
chat-template`'s output byte for byte (both failing counts as agreement).
Needs jinja2. Usage: jinja2_diff.py path/to/vkllm DIR [DIR...]"""
import datetime, json, os, subprocess, sys, tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_jinja_cases import make_env  # noqa: E402


def special(cfg):
    out = {}
    for k in ["bos_token","eos_token","unk_token","pad_token","sep_token","cls_token","mask_token"]:
        v = cfg.get(k)
        if isinstance(v, dict): v = v.get("content")
        if isinstance(v, str): out[k] = v
    return out

def render_ref(template, cfg, req):
    env = make_env()
    kw = dict(special(cfg))
    kw.update({"tools": None, "documents": None, "add_generation_prompt": False})
    kw.update(req)
    try:
        return 0, env.from_string(template).render(**kw)
    except Exception as e:
        return 1, f"{type(e).__name__}: {e}"

def run(binp, cfgdir, req):
    f = tempfile.NamedTemporaryFile('w', suffix='.json', delete=False); json.dump(req, f); f.close()
    p = subprocess.run([binp, 'chat-template', cfgdir, '--json', f.name], capture_output=True)
    os.unlink(f.name)
    return p.returncode, p.stdout.decode('utf-8', 'replace'), p.stderr.decode('utf-8', 'replace')

tools = [{"type": "function", "function": {"name": "get_weather", "description": "Get the weather", "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "City name"}, "unit": {"type": "string", "enum": ["c", "f"]}}, "required": ["city"]}}}]
convs = [
  [{"role": "user", "content": "Hello!"}],
  [{"role": "system", "content": "You are a terse assistant."}, {"role": "user", "content": "What is 2+2?"}],
  [{"role": "user", "content": "Name a color."}, {"role": "assistant", "content": "Blue."}, {"role": "user", "content": "Another one, please.\nJust one word."}],
  [{"role": "system", "content": "Answer in French."}, {"role": "user", "content": "Good morning"}, {"role": "assistant", "content": "Bonjour"}, {"role": "user", "content": "Thanks  😀"}],
  [{"role": "user", "content": "  padded \n"}, {"role": "assistant", "content": "<think>\nreasoning here\n</think>\n\nThe answer."}, {"role": "user", "content": "ok"}],
  [{"role": "user", "content": "Weather in Paris?"}, {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris", "unit": "c"}}}]}, {"role": "tool", "content": "{\"temp\": 21}"}, {"role": "user", "content": "Thanks"}],
  [{"role": "user", "content": "Weather?"}, {"role": "assistant", "content": "Let me check.", "tool_calls": [{"type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"}}]}, {"role": "tool", "content": "cold"}, {"role": "tool", "content": "windy"}],
  [{"role": "system", "content": "sys"}, {"role": "user", "content": "q1"}, {"role": "assistant", "content": "a1", "reasoning_content": "thought 1"}, {"role": "user", "content": "q2"}, {"role": "assistant", "content": "a2", "reasoning_content": "thought 2"}],
  [{"role": "user", "content": [{"type": "text", "text": "Describe"}, {"type": "image"}]}],
]
extras = [{}, {"enable_thinking": False}, {"tools": tools}, {"tools": tools, "enable_thinking": True}]

binp = sys.argv[1]
ok = bad = 0
for cfgdir in sys.argv[2:]:
    cfg = json.load(open(os.path.join(cfgdir, 'tokenizer_config.json')))
    tmpl = cfg.get('chat_template')
    if isinstance(tmpl, list):
        d = {t['name']: t['template'] for t in tmpl}; tmpl = d.get('default', tmpl[0]['template'])
    if not tmpl: continue
    name = os.path.basename(os.path.dirname(cfgdir.rstrip('/')))
    nok = nbad = 0
    for conv in convs:
        for agp in [True, False]:
            for ex in extras:
                req = {"messages": conv, "add_generation_prompt": agp, **ex}
                rrc, ref = render_ref(tmpl, cfg, req)
                grc, got, err = run(binp, cfgdir, req)
                if rrc != 0 and grc != 0:
                    nok += 1; continue
                if rrc == 0 and grc == 0 and ref == got:
                    nok += 1; continue
                nbad += 1
                if nbad <= 3:
                    print(f"--- {name} conv={convs.index(conv)} agp={agp} extra={list(ex)}: ref rc {rrc}, ours rc {grc} {err[:300]}")
                    if rrc: print("   ref error:", ref[:300])
                    else:
                        import difflib
                        for l in list(difflib.unified_diff(ref.splitlines(True), got.splitlines(True), 'ref', 'ours', n=1))[:20]: print('   ', repr(l))
    print(f"{name}: {nok} passed, {nbad} failed")
    ok += nok; bad += nbad
print(f"jinja2: {ok} passed, {bad} failed")
sys.exit(1 if bad else 0)
