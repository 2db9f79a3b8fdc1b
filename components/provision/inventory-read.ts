/**
 * Reading a kit inventory back (components/provision/inventory.ts renders it). Strings Jinja could read as a template
 * are printed with the `!unsafe` tag (markUnsafe); read back, such a string is its own text, and a document edited
 * and printed again keeps the tag on it, so Ansible still never templates it.
 * source: docs.ansible.com playbook_guide/playbooks_advanced_syntax.html ("Unsafe or raw strings"); eemeli/yaml
 * documentation "Custom Data Types" (a custom tag's `resolve`; a node keeps its `tag` when the document is printed).
 */
import { parse, parseDocument, type Document } from "yaml";

/** `!unsafe` read as the string it tags (the library would warn of an unresolved tag and drop it on printing). */
export const UNSAFE_TAG = { tag: "!unsafe", resolve: (s: string): string => s };

/** The inventory's data, `!unsafe` strings as their text. Throws on YAML that does not parse. */
export function parseInventory(text: string): unknown {
    return parse(text, { customTags: [UNSAFE_TAG] });
}

/** The inventory as a document whose printing keeps every `!unsafe` tag. */
export function inventoryDocument(text: string): Document {
    return parseDocument(text, { customTags: [UNSAFE_TAG] });
}
