# rdmakit: run on NVUE switches by the push (components/roce/push.ts, which documents it)
import json, sys, yaml
# YAML 1.1 (PyYAML) reads a bare on/off as a boolean; NVUE prints them as strings
def norm(x):
    return "on" if x is True else "off" if x is False else str(x)
args = sys.argv[1:]
roce = args[0] == "--roce"
if roce:
    args = args[1:]
want = {}
for op in yaml.safe_load(open(args[0])):
    want.update(op.get("set", {}))
try:
    doc = json.load(open(args[1]))
except ValueError as e:
    sys.exit("%s is not JSON (%s)" % (args[1], e))
if roce:
    # nv show qos roce -o json: the running RoCE object; its enable and mode must be the rendered ones
    oper = doc.get("operational", doc) if isinstance(doc, dict) else None
    if not isinstance(oper, dict):
        sys.exit("nv show qos roce -o json printed no object")
    # mode is required; enable (or state, later releases) only when shown: the docs' table leaves it empty at times
    # (fabric-state.ts parseNvueRoceOper says where)
    if oper.get("mode") in (None, ""):
        sys.exit("the operational RoCE state has no mode (the switch does not run RoCE QoS)")
    if norm(oper["mode"]) != norm(want["qos"]["roce"]["mode"]):
        sys.exit("the switch operates RoCE mode %s, rendered %s" % (oper["mode"], want["qos"]["roce"]["mode"]))
    on = oper.get("enable", oper.get("state"))
    if on not in (None, "") and norm(on) not in ("on", "enabled"):
        sys.exit("the switch operates RoCE %s %s, rendered enable %s" % ("enable" if "enable" in oper else "state", on, want["qos"]["roce"]["enable"]))
    sys.exit(0)
have = {}
for op in (doc if isinstance(doc, list) else [{"set": doc}]):
    if isinstance(op, dict):
        have.update(op.get("set", op))
def walk(w, h, path):
    if isinstance(w, dict):
        for k, v in w.items():
            if not isinstance(h, dict) or str(k) not in {str(x) for x in h}:
                sys.exit("applied configuration lacks %s" % "/".join(path + [str(k)]))
            walk(v, {str(x): y for x, y in h.items()}[str(k)], path + [str(k)])
    elif norm(w) != norm(h):
        sys.exit("applied %s is %s, rendered %s" % ("/".join(path), h, w))
walk(want, have, [])
