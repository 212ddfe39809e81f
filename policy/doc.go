// Package policy is where a call's policy is decided (ADR 0019): the rules
// of [policy.rules] compiled (NewRuleSet, Check), decided (RuleSet.Decide:
// deny wins over approve, approve over allow; a rule that cannot be
// evaluated denies), explained rule by rule (Explain), checked against the
// tools' input schemas (Fields), and what they see of a call, built once
// for live calls and for `policy test` over recorded history (NewInput).
// The TOML shape lives in package config, which also versions what
// decides calls (config.PolicyVersion).
//
// What a rule's when expression (CEL) sees, in one list:
//
//	tool         string           the catalog id (SERVER__tool, or the listing name with prefix = false)
//	server       string           the upstream server ("" for the bridge's own tools)
//	annotations  map(string,bool) the tool's MCP annotations, with the specification's defaults
//	args         map(string,dyn)  the call's arguments
//	client       string           the MCP client's name/version
//	session      string           the client session's id
//	caller       map(string,dyn)  transport ("stdio", "http") and uid of the calling process
//	user         map(string,dyn)  who made the call, as the front door's [auth] authenticated them:
//	                              sub, name, email, issuer, client_id (strings), groups (list),
//	                              authenticated (false, and the rest empty, over stdio or the data dir's token)
//	now          timestamp        when the call is decided
//	phase        string           "call", or "result" for a rule with phase = "result"
//	result       map(string,dyn)  a result rule's result as the client would read it:
//	                              text (its text contents), structured, isError ({} for calls)
//
// and the functions: CEL's standard ones, and the strings extension
// (cel-go ext.Strings: lowerAscii, replace, split, substring, trim…). A
// rule's tools match a tool by its id or by SERVER__tool, whatever name it
// is listed under (MatchesTool). To add a variable: declare it in ruleEnv,
// set it in RuleSet.Decide from Input, fill Input in NewInput, and list it
// here.
package policy
