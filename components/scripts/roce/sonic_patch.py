# rdmakit: run on SONiC switches by the push (components/roce/sonic-patch.ts, which documents it)
import json, sys
mode, frag_file, run_file, own, ports = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4]), set(json.loads(sys.argv[5]))
frag = json.load(open(frag_file))
run = json.load(open(run_file))
if mode == "speeds":
    # read-only: the kit never writes PORT.speed (a wrong one flaps or downs the link, and GCU's port validator
    # refuses a speed outside STATE_DB supported_speeds); the planned speed must be what the switch runs
    for p in sorted(ports):
        have = run.get("PORT", {}).get(p, {}).get("speed")
        if have is None:
            sys.exit("PORT|%s is not in CONFIG_DB (no such port on this switch)" % p)
        if str(have) != own[p]:
            sys.exit("PORT|%s runs speed %s Mb/s, the plan says %s: fix speedGbps / portOverrides, or the port (the kit does not change speeds)" % (p, have, own[p]))
    sys.exit(0)
def ptr(*parts):
    return "/" + "/".join(str(p).replace("~", "~0").replace("/", "~1") for p in parts)
ops = []
sim = json.loads(json.dumps(run))  # the running CONFIG_DB with the patch so far applied
def add(parts, value):
    node = sim
    for p in parts[:-1]:
        node = node[p]
    node[parts[-1]] = value
    ops.append({"op": "add", "path": ptr(*parts), "value": value})
def remove(parts):
    del sim[parts[0]][parts[1]]
    ops.append({"op": "remove", "path": ptr(*parts)})
def put_row(t, k, want):
    if t not in sim:
        add([t], {k: want})
    elif sim[t].get(k) != want:
        add([t, k], want)
def put_fields(t, k, want):
    if t not in sim:
        add([t], {k: want})
    elif k not in sim[t]:
        add([t, k], want)
    else:
        for f in sorted(want):
            if sim[t][k].get(f) != want[f]:
                add([t, k, f], want[f])
for t in own["portTables"]:
    want = frag.get(t, {})
    for k in sorted(sim.get(t, {})):
        if k.split("|")[0] in ports and k not in want:
            remove([t, k])
    for k in sorted(want):
        if k.split("|")[0] in ports:
            put_row(t, k, want[k])
        else:
            put_fields(t, k, want[k])
for t in own["namedTables"]:
    want = frag.get(t, {})
    for k in sorted(sim.get(t, {})):
        if k.startswith(own["prefix"]) and k not in want:
            remove([t, k])
    for k in sorted(want):
        put_row(t, k, want[k])
for t in own["fieldTables"]:
    for k in sorted(frag.get(t, {})):
        put_fields(t, k, frag[t][k])
# config apply-patch refuses a patch that leaves a table empty: remove such a table whole instead
touched = lambda t: any(o["path"] == ptr(t) or o["path"].startswith(ptr(t) + "/") for o in ops)
for t in [t for t in sim if sim[t] == {} and touched(t)]:
    ops = [o for o in ops if not (o["path"] == ptr(t) or o["path"].startswith(ptr(t) + "/"))]
    if t in run:
        ops.append({"op": "remove", "path": ptr(t)})
if mode == "patch":
    json.dump(ops, sys.stdout, indent=1)
    sys.stdout.write("\n")
elif ops:
    sys.stderr.write("CONFIG_DB differs from the rendered configuration: %s %s (and %d more)\n" % (ops[0]["op"], ops[0]["path"], len(ops) - 1))
    sys.exit(1)
