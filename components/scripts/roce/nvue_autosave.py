# rdmakit: run on NVUE switches by the push (components/roce/push.ts, which documents it)
import json, sys
try:
    doc = json.load(open(sys.argv[1]))
except ValueError as e:
    sys.exit("nv show system config auto-save -o json is not JSON (%s)" % e)
o = doc.get("operational", doc) if isinstance(doc, dict) else None
o = o if isinstance(o, dict) else {}
norm = lambda x: {True: "on", False: "off"}.get(x, str(x))
if norm(o.get("state")) in ("enabled", "disabled"):
    print("state " + norm(o["state"]))
elif norm(o.get("enable")) in ("on", "off"):
    print("enable " + norm(o["enable"]))
else:
    sys.exit("nv show system config auto-save -o json has no 'state' (enabled/disabled, CL 5.10+) or 'enable' (on/off, 5.9 and earlier) key: %s" % json.dumps(doc)[:200])
