/**
 * Lists in messages. A list that comes from a node, a switch or a log is as long as its sender makes it, so a message
 * names the first few and counts the rest: the report stays readable and its size stays bounded.
 */

/** The first `n` items joined by `sep`, then how many more: `a, b, c and 12 more`. */
export function namedFew(items: readonly string[], n = 5, sep = ", "): string {
    return items.length <= n ? items.join(sep) : `${items.slice(0, n).join(sep)} and ${items.length - n} more`;
}
