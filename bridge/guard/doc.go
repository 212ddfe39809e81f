// Package guard judges what crosses the gateway in both directions
// (DESIGN §13): a tool's descriptor when first seen and on every change
// (Descriptor), a result before the client reads it (Result), a call's
// arguments before anything runs (Args), and a secret one server returned
// on its way to another (Flows). Each judgment is a list of Findings,
// each naming the rule of the pack (policy.PackRules) that made it, one
// line of why, and the text that triggered it; what a finding does is the
// rule's action in the configuration (config.GuardAction).
//
// Text is judged as the model would read it: Unicode NFKC, confusable
// letters folded to Latin, invisible characters removed, and runs of
// base64, hex and URL escapes decoded and judged again.
package guard
