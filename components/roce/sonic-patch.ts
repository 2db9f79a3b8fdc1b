import { roceScript } from "../scripts";

/**
 * What the kit owns in a SONiC CONFIG_DB (components/scripts/roce/sonic_ownership.json, which the push sends to the
 * switch beside sonic_patch.py), and the small Python program the push runs on the switch to turn the rendered
 * fragment into an RFC 6902 JSON patch for `config apply-patch` against the switch's running CONFIG_DB.
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
 *
 * `python3 -c "$SONIC_PATCH_PY" patch|verify <fragment.json> <running.json> <ownership-json> <ports-json>`, or
 * `speeds <fragment.json> <running.json> <{port: Mb/s}-json> <ports-json>` (read-only check of PORT.speed).
 * patch: prints the JSON patch. verify: exits 1 and names the first difference when the patch is not empty.
 * JSON pointers escape `~` and `/` (RFC 6901 §3); SONiC keys use `|`, which needs no escaping.
 */
export interface SonicOwnership {
    portTables: string[];
    namedTables: string[];
    prefix: string;
    fieldTables: string[];
}

export const SONIC_OWNERSHIP: Readonly<SonicOwnership> = JSON.parse(roceScript("sonic_ownership.json"));

export const SONIC_PATCH_PY = roceScript("sonic_patch.py");
