/**
 * The inventory document `{ all: { hosts, vars } }` as YAML: exactly the text `yaml`'s stringify writes for it (the
 * Pulumi side hashes that text to decide whether to re-run Ansible, so one byte more is a re-run), in a fraction of the
 * time. A 2,048-host RoCE inventory is some 90,000 lines, nearly all of them the same few `key: value` pairs over and
 * over (every host has the same roce_host_* values), and `yaml` builds and prints a node for each: about a second.
 *
 * Here each distinct pair is printed once, by `yaml` itself, inside a document that puts it at the very place it has in
 * the inventory (under `all.hosts.<host>`, or under `all.vars`), so quoting, tags (`!unsafe`) and indentation are
 * what `yaml` decides there; a host's entry is its key's line followed by its pairs' lines, which is how `yaml` joins
 * a block mapping's items (yaml dist/stringify/stringifyCollection.js stringifyBlockCollection: one item per line,
 * nested lines carrying their full indentation). Where that joining could differ (a string spanning lines, which may
 * print as a block scalar whose chomping reaches the next item; a key `yaml` prints in the explicit `? ` form; a value
 * that is not plain data) the whole document is printed by `yaml` instead.
 */
import { stringify } from "yaml";

/** The stringify options of the inventory (no line folding; a repeated value is printed again, not aliased). */
const OPTIONS = { lineWidth: 0, aliasDuplicateObjects: false } as const;

export interface InventoryDoc {
    all: { hosts: Record<string, Record<string, unknown>>; vars: Record<string, unknown> };
}

/** The reference: the whole document through `yaml`, with `mark` (markUnsafe) applied first. */
export function inventoryYamlByLibrary(doc: InventoryDoc, mark: (v: unknown) => unknown): string {
    return stringify(mark(doc), OPTIONS);
}

/** Plain data on one line: what the pair-at-a-time printing is exact for. */
function plainOneLine(value: unknown): boolean {
    if (typeof value === "string") return !value.includes("\n") && !value.includes("\r");
    // -0: yaml prints `-0`, and JSON (the pairs' ids) spells it `0`, as 0: the library prints it
    if (typeof value === "number") return Number.isFinite(value) && !Object.is(value, -0);
    if (typeof value === "boolean" || value === null) return true;
    if (Array.isArray(value)) return value.every(plainOneLine);
    if (typeof value === "object" && Object.getPrototypeOf(value) === Object.prototype) {
        // a key whose value is undefined is left out of a mapping (yaml's createNode without keepUndefined)
        return Object.entries(value as Record<string, unknown>).every(([k, v]) => plainOneLine(k) && (v === undefined || plainOneLine(v)));
    }
    return false;
}

const HOSTS_HEAD = "all:\n  hosts:\n";

/** `yaml`'s text for document `doc` after `head`, or undefined when it does not start with `head`. */
function after(head: string, doc: unknown, mark: (v: unknown) => unknown): string | undefined {
    const text = stringify(mark(doc), OPTIONS);
    return text.startsWith(head) ? text.slice(head.length) : undefined;
}

/**
 * The lines `yaml` prints under each key of `entries` (a mapping at `all.hosts`, keys p0, p1, …): one document for
 * all, cut at the key lines (the only lines indented by exactly four spaces). undefined when it is not of that shape.
 */
function linesUnder(entries: unknown[], mark: (v: unknown) => unknown): string[] | undefined {
    const text = after(HOSTS_HEAD, { all: { hosts: Object.fromEntries(entries.map((e, i) => [`p${i}`, e])) } }, mark);
    if (text === undefined) return undefined;
    const out: string[] = [];
    let at = -1;
    for (const line of text.split("\n")) {
        if (line === `    p${out.length}:`) {
            out.push("");
            at = out.length - 1;
        } else if (at >= 0 && line.startsWith("      ")) {
            out[at] += line + "\n";
        } else if (line !== "" || at < 0) {
            return undefined;
        }
    }
    return out.length === entries.length ? out : undefined;
}

/**
 * `yaml`'s text of the `vars:` item under `all:`, once per vars object and `mark`: the fan-out prints one inventory
 * a node, each with the same vars (some 200 KB with the Slurm files of 2,048 hosts), so printing them once a node
 * would be most of a plan's time.
 */
const varsTexts = new WeakMap<object, { mark: (v: unknown) => unknown; text: string | undefined }>();
function varsOf(vars: Record<string, unknown>, mark: (v: unknown) => unknown): string | undefined {
    const hit = varsTexts.get(vars);
    if (hit && hit.mark === mark) return hit.text;
    const text = after("all:\n", { all: { vars } }, mark);
    varsTexts.set(vars, { mark, text });
    return text;
}

/**
 * Strings printed once per shape. `yaml` decides how to print a one-line string from its characters: the plain form
 * unless a schema tag's test would read it as something else (YAML 1.2 core: yaml dist/schema/core/int.js, float.js,
 * bool.js, schema/common/null.js; their only digit classes are [0-7] and [0-9]) or a character or its place calls for
 * quotes. A string's shape keeps every character but its digits, 0-7 as 0 and 8-9 as 8, so strings of one shape are
 * printed alike, each digit as itself in the same place: 2,048 hosts' addresses or names are a handful of shapes, and
 * the rest are the printed text of one of their shape with the string swapped in. Only strings of characters that no
 * quoting escapes (SHAPED) are taken so, and only where that string appears once in its printed text (not also in a
 * key); everything else is printed by `yaml` as it is.
 */
const SHAPED = /^[\w.:/@=,+-]+$/;
const shapeOf = (s: string): string => s.replace(/[0-7]/g, "0").replace(/[89]/g, "8");

/**
 * The printed text of each item: `print` gets the indices of the items to print with `yaml` (one of each shape, and
 * every item without one) and returns their texts; `shape` gives an item's shape and the string to swap, or undefined.
 */
function printByShape(count: number, shape: (i: number) => { shape: string; value: string } | undefined, print: (items: number[]) => string[] | undefined): string[] | undefined {
    const repOf = new Map<string, number>();
    const direct: number[] = [];
    const from: Array<number | undefined> = [];
    for (let i = 0; i < count; i++) {
        const sh = shape(i);
        const rep = sh === undefined ? undefined : repOf.get(sh.shape);
        if (sh !== undefined && rep === undefined) repOf.set(sh.shape, i);
        if (rep === undefined) direct.push(i); else from[i] = rep;
    }
    const printed = print(direct);
    if (!printed) return undefined;
    const out: string[] = [];
    direct.forEach((i, j) => (out[i] = printed[j]));
    const again: number[] = [];
    for (let i = 0; i < count; i++) {
        const rep = from[i];
        if (rep === undefined) continue;
        const [was, now] = [shape(rep)!.value, shape(i)!.value];
        const at = out[rep].indexOf(was);
        if (at < 0 || out[rep].indexOf(was, at + 1) >= 0) again.push(i);
        else out[i] = out[rep].slice(0, at) + now + out[rep].slice(at + was.length);
    }
    if (again.length) {
        const more = print(again);
        if (!more) return undefined;
        again.forEach((i, j) => (out[i] = more[j]));
    }
    return out;
}

/** A `key: string` pair's shape (the key as it is, the string's shape), or undefined for any other pair. */
function pairShape(pair: Record<string, unknown>): { shape: string; value: string } | undefined {
    const keys = Object.keys(pair);
    const value = keys.length === 1 ? pair[keys[0]] : undefined;
    return typeof value === "string" && SHAPED.test(value) ? { shape: `${keys[0]}\u0000${shapeOf(value)}`, value } : undefined;
}

/**
 * linesUnder, remembering each pair's lines by the pair (a pair under a host prints the same under any host): the
 * fan-out prints one inventory a node, whose pairs are mostly the ones every node has. Bounded like parsed.ts.
 */
const pairTexts = new Map<string, string>();
let pairMark: ((v: unknown) => unknown) | undefined;
function pairLines(pairs: Record<string, unknown>[], ids: string[], mark: (v: unknown) => unknown): string[] | undefined {
    if (pairMark !== mark) {
        pairTexts.clear();
        pairMark = mark;
    }
    const missing = ids.map((id, i) => (pairTexts.has(id) ? -1 : i)).filter((i) => i >= 0);
    if (missing.length) {
        const lines = printByShape(missing.length, (j) => pairShape(pairs[missing[j]]), (items) => linesUnder(items.map((j) => pairs[missing[j]]), mark));
        if (!lines) return undefined;
        if (pairTexts.size + missing.length > 65536) pairTexts.clear();
        missing.forEach((i, j) => pairTexts.set(ids[i], lines[j]));
    }
    return ids.map((id) => pairTexts.get(id)!);
}

/**
 * Each host's key line under `all.hosts:` as `yaml` prints that key above a mapping (quoted where a plain name would
 * read as something else, e.g. `"true":`), remembered by name like pairLines: a plan prints the same 2,048 names in
 * the software run's inventory, validation's, and each node's own inventory of the fan-out. undefined where a key is
 * printed in another form (the explicit `? ` form of a long key): the caller leaves that document to the library.
 */
const keyTexts = new Map<string, string>();
let keyMark: ((v: unknown) => unknown) | undefined;
function keyLines(names: string[], mark: (v: unknown) => unknown): string[] | undefined {
    if (keyMark !== mark) {
        keyTexts.clear();
        keyMark = mark;
    }
    const missing = names.filter((n) => !keyTexts.has(n));
    if (missing.length) {
        const shape = (h: number) => (SHAPED.test(missing[h]) ? { shape: shapeOf(missing[h]), value: missing[h] } : undefined);
        const lines = printByShape(missing.length, shape, (items) => printKeyLines(items.map((h) => missing[h]), mark));
        if (!lines) return undefined;
        if (keyTexts.size + missing.length > 65536) keyTexts.clear();
        missing.forEach((n, h) => keyTexts.set(n, lines[h]));
    }
    return names.map((n) => keyTexts.get(n)!);
}

/** `yaml`'s key line (with its newline) of each name, or undefined where one is not a plain `    name:` line. */
function printKeyLines(names: string[], mark: (v: unknown) => unknown): string[] | undefined {
    const keyed = after(HOSTS_HEAD, { all: { hosts: Object.fromEntries(names.map((n) => [n, { x: 0 }])) } }, mark)?.split("\n");
    if (!keyed || keyed.length !== 2 * names.length + 1) return undefined;
    const out: string[] = [];
    for (let h = 0; h < names.length; h++) {
        const keyLine = keyed[2 * h];
        if (!/^ {4}\S.*:$/.test(keyLine) || keyed[2 * h + 1] !== "      x: 0") return undefined;
        out.push(keyLine + "\n");
    }
    return out;
}

/** The inventory as `yaml` prints it (see the file comment). `mark` tags Jinja-looking strings (markUnsafe). */
export function inventoryYaml(doc: InventoryDoc, mark: (v: unknown) => unknown): string {
    const { hosts, vars } = inventoryYamlParts(doc, mark);
    return hosts + vars;
}

/**
 * inventoryYaml's text in two parts whose concatenation it is: the head and the hosts, then the `vars:` item (printed
 * once per vars object, varsOf), so that texts of many documents with the same vars can share that part (the fan-out's
 * per-node inventories, node-local.ts). A document printed whole by the library is all in `hosts`, with `vars` "".
 */
export function inventoryYamlParts(doc: InventoryDoc, mark: (v: unknown) => unknown): { hosts: string; vars: string } {
    const whole = () => ({ hosts: inventoryYamlByLibrary(doc, mark), vars: "" });
    const { hosts, vars } = doc.all;
    const names = Object.keys(hosts);
    // `vars` is printed whole by `yaml` (varsOf) as the last item, as in the document: any value may be there (the
    // Slurm files are strings of many lines); only the hosts, printed pair by pair, must be plain one-line data
    if (names.length === 0 || Object.getPrototypeOf(hosts) !== Object.prototype || !names.every(plainOneLine)) return whole();
    // each distinct `key: value` pair, and which pairs each host has, in order (a key whose value is undefined is
    // left out, as yaml leaves it out)
    const ids = new Map<string, number>();
    const distinct: Record<string, unknown>[] = [];
    const distinctIds: string[] = [];
    // A pair's id is its key and its value's JSON text (pairLines remembers printed pairs by it); a value met before
    // under the same key is found without that text: a one-line plain value (plainOneLine) is a string, a finite number,
    // a boolean or null, whose JSON texts are equal exactly when the values are (SameValueZero; -0 is not plain
    // data here), or an object or array, met again as the same object (nothing changes it during this call). Each key
    // and value is checked to be one line of plain data when first met, what the pair-at-a-time printing is exact for
    // (-1 otherwise: the library prints the whole document).
    const seen = new Map<string, Map<unknown, number>>();
    const pairId = (k: string, v: unknown): number => {
        let under = seen.get(k);
        if (under === undefined) {
            if (!plainOneLine(k)) return -1;
            seen.set(k, (under = new Map()));
        }
        let i = under.get(v);
        if (i !== undefined) return i;
        if (!plainOneLine(v)) return -1;
        const id = `${k}\u0000${JSON.stringify(v)}`;
        i = ids.get(id);
        if (i === undefined) {
            ids.set(id, (i = distinct.length));
            distinct.push({ [k]: v });
            distinctIds.push(id);
        }
        under.set(v, i);
        return i;
    };
    const byHost: number[][] = [];
    for (const name of names) {
        const host: unknown = hosts[name];
        if (host === null || typeof host !== "object" || Object.getPrototypeOf(host) !== Object.prototype) return whole();
        const pairs: number[] = [];
        for (const k in host) {
            // own keys in Object.entries' order (a plain object's); a key whose value is undefined is left out
            if (!Object.prototype.hasOwnProperty.call(host, k)) continue;
            const v = (host as Record<string, unknown>)[k];
            if (v === undefined) {
                if (!plainOneLine(k)) return whole();
                continue;
            }
            const i = pairId(k, v);
            if (i < 0) return whole();
            pairs.push(i);
        }
        byHost.push(pairs);
    }
    if (byHost.some((pairs) => pairs.length === 0)) return whole();
    const pairText = pairLines(distinct, distinctIds, mark);
    // every host's own line (keyLines); a key printed in another form is left to the library with the whole document
    const keyed = keyLines(names, mark);
    const varsText = varsOf(vars, mark);
    if (!pairText || !keyed || varsText === undefined) return whole();
    let out = HOSTS_HEAD;
    for (let h = 0; h < names.length; h++) {
        let entry = keyed[h];
        for (const i of byHost[h]) entry += pairText[i];
        out += entry;
        hostEntries.set(hosts[names[h]], { name: names[h], mark, entry });
    }
    return { hosts: out, vars: varsText };
}

/**
 * Each host's lines (its key line and its pairs') as inventoryYamlParts printed them, by the host's object: a document
 * of that host alone, with the same entries, prints them again byte for byte (the same key line and pair lines, from
 * the same functions), so the fan-out's one-host inventories of an inventory printed here (node-local.ts) take them
 * instead of printing 2,048 documents again.
 */
const hostEntries = new WeakMap<object, { name: string; mark: (v: unknown) => unknown; entry: string }>();

/**
 * inventoryYamlParts of `{ all: { hosts: { [name]: host }, vars } }`, taking the host's lines from an earlier print of
 * the same object under the same name (hostEntries) when there is one. The caller must not have changed the object
 * since; `vars` is printed once per object (varsOf), as there.
 */
export function oneHostYamlParts(name: string, host: Record<string, unknown>, vars: Record<string, unknown>, mark: (v: unknown) => unknown): { hosts: string; vars: string } {
    const seen = hostEntries.get(host);
    const varsText = seen && seen.name === name && seen.mark === mark ? varsOf(vars, mark) : undefined;
    if (seen && varsText !== undefined) return { hosts: HOSTS_HEAD + seen.entry, vars: varsText };
    return inventoryYamlParts({ all: { hosts: { [name]: host }, vars } }, mark);
}
