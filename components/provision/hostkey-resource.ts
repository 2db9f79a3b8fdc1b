/**
 * The stack's host key as a resource: a `tls.PrivateKey` (algorithm ED25519) in the stack's state, made once at the
 * first `pulumi up` and kept across runs (a key the program made itself would change at every run, and with it the
 * user data). Its private half is a secret output (@pulumi/tls privateKey.js: additionalSecretOutputs
 * privateKeyOpenssh, privateKeyPem, privateKeyPemPkcs8), and the kit wraps it in pulumi.secret once more, so the user
 * data carrying it is secret whatever the provider version. Chosen over a dynamic provider (its code would be
 * serialised into the state) and over keys made by the program (not stable). hostkeys.ts says how it is installed.
 * source: https://www.pulumi.com/registry/packages/tls/api-docs/privatekey/ (algorithm ED25519; privateKeyOpenssh,
 * publicKeyOpenssh).
 */
import * as pulumi from "@pulumi/pulumi";
import * as tls from "@pulumi/tls";

/** A host key as the stack keeps it: the private half a secret, the public line (`ssh-ed25519 AAAA...`) plain. */
export interface StackHostKey {
    privateKey: pulumi.Output<string>;
    publicKey: pulumi.Output<string>;
}

/** The group's host key, a child of `parent` named `name`. */
export function stackHostKey(name: string, parent: pulumi.Resource): StackHostKey {
    const key = new tls.PrivateKey(name, { algorithm: "ED25519" }, { parent });
    return {
        privateKey: pulumi.secret(key.privateKeyOpenssh),
        // a public key: plain, so known_hosts, the inventory and the outputs can show it
        publicKey: pulumi.unsecret(key.publicKeyOpenssh).apply((k) => (k ?? "").trim()),
    };
}

