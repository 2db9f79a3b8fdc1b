/**
 * What the kit owns in a SONiC CONFIG_DB, and the small Python program the push runs on the switch to turn the
 * rendered fragment into an RFC 6902 JSON patch for `config apply-patch` against the switch's running CONFIG_DB.
 *
 * Why on the switch: a patch that removes a row must name a row that exists (RFC 6902 §4.2), and which factory rows
 * a switch has (QUEUE `Ethernet0|3-4`, BUFFER_PG `Ethernet0|3-4`, PFC_WD of an older plan …) is only known there.
 * Python 3 is on every SONiC image (sonic-utilities, sonic-cfggen are Python). The same program, run again on the
 * CONFIG_DB after the apply, is the verify step: an empty patch means the switch holds exactly the rendered rows.
 *
 * Ownership (the kit replaces these, so a plan change removes what an earlier plan or the factory set):
 * - per-port tables: every row of an owned port (`Ethernet0`, `Ethernet0|3`, `Ethernet0|0-2`) that the fragment does
 *   not hold is removed, every row it holds replaces the switch's row whole;
 * - named tables: rows named `RDMAKIT_*` are the kit's; stale ones are removed;
 * - field rows (PORT: mtu only, never speed; CABLE_LENGTH|AZURE, LOSSLESS_TRAFFIC_PATTERN|AZURE, PORT_QOS_MAP|global, PFC_WD|GLOBAL): only
 *   the fields the fragment sets are written; the platform's own fields (lanes, alias) stay.
 */

export const SONIC_OWNERSHIP = {
    portTables: ["PORT_QOS_MAP", "QUEUE", "BUFFER_PG", "BUFFER_QUEUE", "PFC_WD"],
    namedTables: ["DSCP_TO_TC_MAP", "TC_TO_PRIORITY_GROUP_MAP", "TC_TO_QUEUE_MAP", "MAP_PFC_PRIORITY_TO_QUEUE", "PFC_PRIORITY_TO_PRIORITY_GROUP_MAP", "WRED_PROFILE", "SCHEDULER"],
    prefix: "RDMAKIT_",
    fieldTables: ["PORT", "CABLE_LENGTH", "LOSSLESS_TRAFFIC_PATTERN"],
} as const;

/**
 * `python3 -c "$SONIC_PATCH_PY" patch|verify <fragment.json> <running.json> <ownership-json> <ports-json>`, or
 * `speeds <fragment.json> <running.json> <{port: Mb/s}-json> <ports-json>` (read-only check of PORT.speed).
 * patch: prints the JSON patch. verify: exits 1 and names the first difference when the patch is not empty.
 * JSON pointers escape `~` and `/` (RFC 6901 §3); SONiC keys use `|`, which needs no escaping.
 */
export const SONIC_PATCH_PY = String.raw`
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
`;
