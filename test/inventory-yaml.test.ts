// The inventory's YAML writer (components/provision/inventory-yaml.ts) against the `yaml` library it stands in for: the
// same bytes for the kit's own inventories and for documents built to hit every quoting rule and every fall-back.
import { test } from "node:test";
import assert from "node:assert/strict";
import { parse } from "yaml";
import { inventoryYaml, inventoryYamlByLibrary, inventoryYamlParts, oneHostYamlParts, type InventoryDoc } from "../components/provision/inventory-yaml";
import { markUnsafe, renderInventory } from "../components/provision/inventory";
import { inventoryHosts } from "../components/provision/nodes";
import { planCluster } from "../components/plan";
import { parseClusterSpec } from "../components/spec";
import { scaledStack } from "../bench/scale";

const same = (doc: InventoryDoc) => assert.equal(inventoryYaml(doc, markUnsafe), inventoryYamlByLibrary(doc, markUnsafe));

test("the bare-metal example's inventory, scaled to 16 hosts, is the library's text byte for byte", () => {
    // the bench's rail fabric (bench/scale.ts): 16 hosts on 8 rails
    const cluster = (scaledStack("roce-h100.yaml", 16) as { config: Record<string, any> }).config["rdmakit:cluster"];
    const plan = planCluster(parseClusterSpec(cluster));
    const text = renderInventory({ hosts: inventoryHosts(plan, cluster.roce.hosts.map((h: { address: string }) => h.address)), vars: plan.ansibleVars });
    const doc = parse(text) as InventoryDoc;
    assert.equal(Object.keys(doc.all.hosts).length, 16);
    assert.ok("roce_host_dscp" in doc.all.hosts.gpu0007, "host vars are in the inventory");
    same(doc);
    assert.equal(text, "# Rendered by rdmakit (components/provision/inventory.ts); do not edit.\n" + inventoryYamlByLibrary(doc, markUnsafe));
});

test("names and values that YAML would read as something else are quoted as the library quotes them", () => {
    const awkward = ["", "true", "False", "null", "~", "yes", "1.0", "0x1F", "0o17", "1e3", ".inf", "-", "- a", "? x", "a: b", "a #b", "#c",
        "'q'", "\"dq\"", "x:", " lead", "trail ", "{{ ansible_host }}", "{%raw%}", "a,b", "[x]", "@at", "`tick`", "%pct", "---x", "...y", "é ü"];
    const hosts: InventoryDoc["all"]["hosts"] = {};
    ["true", "123", "0x1F", "null", "n.1", "a-b"].forEach((name, i) => {
        hosts[name] = {
            ansible_host: `10.0.0.${i}`, ansible_port: 22, ansible_user: awkward[i % awkward.length],
            list: awkward, nested: { deep: { deeper: awkward.slice(i), n: [0, -1, 0.1, 1e21, true, false, null] }, empty: {}, none: [] },
            objects: [{ a: 1, b: "{x}" }, { c: [] }], gone: undefined,
        };
    });
    same({ all: { hosts, vars: { ansible_ssh_common_args: '-o ProxyCommand="ssh -W %h:%p x@y"', odd: awkward, map: { "key with: colon": 1, "#k": 2 } } } });
});

test("what cannot be printed a pair at a time goes to the library whole, with the same result", () => {
    const base = { ansible_host: "10.0.0.1", ansible_port: 22, ansible_user: "u" };
    // a string over lines (a block scalar), a key long enough for the explicit `? ` form, values that are not plain data
    same({ all: { hosts: { a: { ...base, script: "line one\nline two\n\n" }, b: base }, vars: {} } });
    same({ all: { hosts: { ["h".repeat(1100)]: base }, vars: {} } });
    same({ all: { hosts: { a: { ...base, nan: Number.NaN, inf: Number.POSITIVE_INFINITY } }, vars: { x: [undefined, 1] } } });
    same({ all: { hosts: { a: { ...base, when: new Date(0) } }, vars: {} } });
});

test("a value met again under a key is the same pair only where the library prints it alike: 1 and \"1\", 0 and -0, a list shared or changed", () => {
    const shared = ["mlx5_0", "mlx5_1"];
    const base = { ansible_host: "10.0.0.1", ansible_port: 22, ansible_user: "u" };
    const doc = (): InventoryDoc => ({
        all: {
            hosts: {
                a: { ...base, v: 1, w: "1", s: shared, z: 0 },
                b: { ...base, v: "1", w: 1, s: shared, z: 0 },
                c: { ...base, v: true, w: "true", s: [...shared], z: [0] },
                d: { ...base, v: null, w: "null", s: [shared], z: -0 },
                e: { ...base, v: 1, w: "1", s: shared, z: [-0] },
            },
            vars: {},
        },
    });
    same(doc());
    // the same list object changed between two prints: the second prints it as it is now
    shared.push("mlx5_2");
    same(doc());
    assert.match(inventoryYaml(doc(), markUnsafe), /- mlx5_2/);
});

test("vars of many-line strings (the Slurm files) are printed by the library once, after hosts printed a pair at a time: the same text", () => {
    const host = (i: number) => ({ ansible_host: `10.0.0.${i}`, ansible_user: "ubuntu", roce_host_dscp: 26, roce_host_interfaces: ["eth0", "eth1"] });
    for (const text of ["a\nb\n", "keep\n\n\n", "strip\nno newline", "{{ not jinja }}\nx\n", "  leading\nspaces\n"]) {
        const vars = { slurm_files: { "slurm.conf": text, "gres.conf": "Name=gpu\n" }, z_last: text };
        same({ all: { hosts: { n1: host(1), n2: host(2) }, vars } });
        // the same vars object again (the fan-out's one inventory a node): the text printed once is still right
        same({ all: { hosts: { n3: host(3) }, vars } });
    }
});

test("strings of one shape (digits apart) printed once a shape: every host's name and values are still the library's text", () => {
    // digits that change what YAML reads (octal 0o[0-7], hex, exponent, a leading sign or dot) beside ones that do not,
    // in names and in values; and a value that is also part of its key (printed by the library, not swapped in)
    const tricky = ["0o17", "0o18", "0o19", "0x1F", "0x19", "1e3", "1e9", "123", "129", "1.5", "9.5", ".5", ".9", "-5", "+8", "08", "007",
        "10.20.0.1", "10.20.0.9", "10.20.1.255", "192.168.0.1", "a1", "a9", "1:2", "9:8", "x-1", "x-9", "host1", "0", "8"];
    const hosts: InventoryDoc["all"]["hosts"] = {};
    tricky.forEach((t, i) => {
        hosts[`gpu${String(i).padStart(4, "0")}`] = { ansible_host: t, ansible_user: "u", port1: String(i % 10), [`k${t}`]: t };
        hosts[t] = { ansible_host: `10.0.${i}.${9 - (i % 10)}`, ansible_user: tricky[(i + 3) % tricky.length] };
    });
    same({ all: { hosts, vars: {} } });
    // and again, with every shape already printed once in this process
    same({ all: { hosts: Object.fromEntries(Object.entries(hosts).reverse()), vars: { x: 1 } } });
});

test("a host printed in a whole inventory prints alone as the library prints that one-host document (the fan-out's own inventories)", () => {
    const hosts: InventoryDoc["all"]["hosts"] = {
        n1: { ansible_host: "10.0.0.1", ansible_port: 22, ansible_user: "ubuntu", list: ["a", "true"], map: { k: "{x}" } },
        "true": { ansible_host: "10.0.0.2", ansible_port: 2222, ansible_user: "u", gone: undefined },
    };
    inventoryYaml({ all: { hosts, vars: { x: 1 } } }, markUnsafe);
    // other vars than the whole inventory's, as node-local.ts gives (the connection variables taken out)
    const vars = { y: "multi\nline", z: [1, 2] };
    for (const name of Object.keys(hosts)) {
        const one = { all: { hosts: { [name]: hosts[name] }, vars } };
        const parts = oneHostYamlParts(name, hosts[name], vars, markUnsafe);
        assert.deepEqual(parts, inventoryYamlParts(one, markUnsafe));
        assert.equal(parts.hosts + parts.vars, inventoryYamlByLibrary(one, markUnsafe));
    }
    // under another name, or a host never printed: printed afresh
    const renamed = oneHostYamlParts("n9", hosts.n1, vars, markUnsafe);
    assert.equal(renamed.hosts + renamed.vars, inventoryYamlByLibrary({ all: { hosts: { n9: hosts.n1 }, vars } }, markUnsafe));
    const fresh = { ansible_host: "h", ansible_port: 1, ansible_user: "v" };
    const printed = oneHostYamlParts("f", fresh, vars, markUnsafe);
    assert.equal(printed.hosts + printed.vars, inventoryYamlByLibrary({ all: { hosts: { f: fresh }, vars } }, markUnsafe));
});

test("renderInventory: each host gets its own variables sorted by name, whether its names are the last host's or not", () => {
    const u = { user: "u" };
    const text = renderInventory({
        hosts: [
            { name: "a", address: "10.0.0.1", ...u, vars: { zeta: 1, alpha: 2 } },
            { name: "b", address: "10.0.0.2", ...u, vars: { zeta: 3, alpha: 4 } },
            { name: "c", address: "10.0.0.3", ...u, vars: { omega: 5, alpha: 6 } },
            { name: "d", address: "10.0.0.4", ...u, vars: { zeta: 7, alpha: 8, mid: undefined } },
            { name: "e", address: "10.0.0.5", ...u },
            { name: "f", address: "10.0.0.6", ...u, vars: { beta: 9 } },
            { name: "g", address: "10.0.0.7", ...u, vars: JSON.parse('{"__proto__": {"x": 1}, "beta": 10}') },
        ],
        vars: {},
    });
    const hosts = parse(text).all.hosts as Record<string, Record<string, unknown>>;
    const own = (h: string) => Object.fromEntries(Object.entries(hosts[h]).filter(([k]) => !k.startsWith("ansible_")));
    assert.deepEqual(Object.keys(hosts.a), ["ansible_host", "ansible_port", "ansible_user", "alpha", "zeta"]);
    assert.deepEqual(Object.keys(hosts.c), ["ansible_host", "ansible_port", "ansible_user", "alpha", "omega"]);
    assert.deepEqual([own("a"), own("b"), own("c"), own("d")], [{ alpha: 2, zeta: 1 }, { alpha: 4, zeta: 3 }, { alpha: 6, omega: 5 }, { alpha: 8, zeta: 7 }]);
    assert.deepEqual([own("e"), own("f"), own("g")], [{}, { beta: 9 }, { beta: 10 }]);
});

test("renderInventory's cache: an option given as undefined is the inventory without it; 0 and -0 are two inventories", () => {
    const hosts = [{ name: "a", address: "10.0.0.1", user: "u", vars: { n: 1 } }];
    const without = renderInventory({ hosts, vars: { x: 1 } });
    assert.equal(renderInventory({ hosts, bastion: undefined, ssm: undefined, vars: { x: 1 } }), without);
    const zero = renderInventory({ hosts, vars: { x: 0, y: [Number.NaN] } });
    const negative = renderInventory({ hosts, vars: { x: -0, y: [Number.NaN] } });
    assert.match(zero, /\n {4}x: 0\n/);
    assert.match(negative, /\n {4}x: -0\n/);
});

test("each host's entry: the connection's names, its own pinned ssh arguments, its variables by name (`__proto__` none), whatever the host before had", () => {
    const own = JSON.parse('{"zeta": 1, "__proto__": 7, "alpha": "a"}') as Record<string, unknown>;
    const text = renderInventory({
        hosts: [
            { name: "n1", address: "10.0.0.1", user: "u", vars: { b: 1, a: 2 } },
            { name: "n2", address: "10.0.0.2", user: "u", port: 2222, vars: { b: 3, a: 4 } },
            { name: "n3", address: "10.0.0.3", user: "u", vars: { b: 5, a: 6 }, pinnedKnownHostsFile: "/k/head" },
            { name: "n4", address: "10.0.0.4", user: "u", vars: { b: 7, a: 8 } },
            { name: "n5", address: "10.0.0.5", user: "u", vars: { c: 9 } },
            { name: "n6", address: "10.0.0.6", user: "u", vars: own },
            { name: "n7", address: "10.0.0.7", user: "u" },
        ],
        vars: {},
    });
    const hosts = (parse(text) as { all: { hosts: Record<string, Record<string, unknown>> } }).all.hosts;
    const conn = ["ansible_host", "ansible_port", "ansible_user"];
    assert.deepEqual(Object.keys(hosts), ["n1", "n2", "n3", "n4", "n5", "n6", "n7"]);
    assert.deepEqual(Object.entries(hosts.n1), [["ansible_host", "10.0.0.1"], ["ansible_port", 22], ["ansible_user", "u"], ["a", 2], ["b", 1]]);
    assert.deepEqual(Object.entries(hosts.n2), [["ansible_host", "10.0.0.2"], ["ansible_port", 2222], ["ansible_user", "u"], ["a", 4], ["b", 3]]);
    assert.deepEqual(Object.keys(hosts.n3), [...conn, "ansible_ssh_common_args", "a", "b"]);
    assert.match(String(hosts.n3.ansible_ssh_common_args), /UserKnownHostsFile=\/k\/head/);
    assert.deepEqual(Object.entries(hosts.n4), [["ansible_host", "10.0.0.4"], ["ansible_port", 22], ["ansible_user", "u"], ["a", 8], ["b", 7]]);
    assert.deepEqual(Object.entries(hosts.n5), [["ansible_host", "10.0.0.5"], ["ansible_port", 22], ["ansible_user", "u"], ["c", 9]]);
    assert.deepEqual(Object.entries(hosts.n6), [["ansible_host", "10.0.0.6"], ["ansible_port", 22], ["ansible_user", "u"], ["alpha", "a"], ["zeta", 1]]);
    assert.deepEqual(Object.entries(hosts.n7), [["ansible_host", "10.0.0.7"], ["ansible_port", 22], ["ansible_user", "u"]]);
});
