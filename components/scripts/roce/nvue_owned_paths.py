# rdmakit: run on NVUE switches by the push (components/roce/push.ts, which documents it)
import os, sys, yaml
out = []
for f in sys.argv[1:]:
    if not os.path.exists(f):
        continue
    for op in yaml.safe_load(open(f)) or []:
        qos = (op.get("set") or {}).get("qos") or {}
        for k, v in qos.items():
            keys = ["qos " + k] if k in ("roce", "pfc-watchdog") or not isinstance(v, dict) else ["qos %s %s" % (k, p) for p in v]
            for p in keys:
                if p not in out:
                    out.append(p)
print("\n".join(out))
