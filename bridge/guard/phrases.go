package guard

import (
	"regexp"
	"strings"
)

// phrase is one kind of text aimed at the model rather than at a reader,
// matched in folded text (Fold). Hints are literal text one of which every
// match contains: the regexp runs only on a window around each (a
// Contains is far cheaper than a regexp, and most text holds none).
type phrase struct {
	why   string
	hints []string
	re    *regexp.Regexp
}

// instructions are what a prompt injection says, in a description or a
// result: it overrides the model's instructions, claims a role, asks for
// secrecy, or mandates a call. Each is phrased so documentation does not
// say it ("use this tool to…" does not match; "ignore previous
// instructions" does).
var instructions = []phrase{
	{"overrides the model's instructions", []string{"ignore", "disregard", "forget", "override", "bypass"}, regexp.MustCompile(`\b(ignore|disregard|forget|override|bypass)\b (all |any |the |your |every )*(previous|prior|above|earlier|other|system|original|safety)? ?(instructions|directions|rules|prompts?|guidelines|guardrails|restrictions)\b`)},
	{"claims a new role or mode for the model", []string{"mode", "now", "instructions"}, regexp.MustCompile(`\byou are now (a |an )?(dan|jailbroken|unrestricted|unfiltered|free of|no longer)\b|\b(you are|you.re) (now )?(in )?(admin|administrator|developer|god|root|jailbreak|dan|unrestricted|maintenance) mode\b|\benter (admin|god|jailbreak|dan|unrestricted) mode\b|\bnew (system )?instructions ?:`)},
	{"poses as a system or assistant message", []string{"system", "assistant", "developer", "<|", "inst]"}, regexp.MustCompile(`(^|[\n.!>\]] ?)(system|assistant|developer) ?(message|prompt|override)? ?: ?(you|ignore|from now|new|delete|send|call|always|do not)\b|<\|?(system|im_start|im_end)\|?>|\[/?inst\]`)},
	{"asks the model to keep something from the user", []string{"user", "human", "anyone", "operator", "secret", "hidden", "confidential", "mention", "reveal", "disclose"}, regexp.MustCompile(`\b(do not|don't|never|must not) (tell|mention|inform|reveal|show|notify|alert|disclose)\b[^.]{0,40}\b(user|human|anyone|operator)\b|\bwithout (telling|informing|notifying|alerting|asking) (the )?(user|human)\b|\b(keep|this is) (this )?(secret|hidden|confidential) from\b|\bdo not (mention|reveal|disclose) (this|these|that|it)\b`)},
	{"tags text as urgent orders for the model", []string{"<important>", "<instruction", "<system>", "<secret>", "<hidden>"}, regexp.MustCompile(`<(important|instructions?|system|secret|hidden)>`)},
	{"mandates a call of another tool", []string{"tool", "instead", "now"}, regexp.MustCompile(`\b(you must|you should|always|first|immediately|before (using|calling|answering)[^.]{0,40}?,?) ?(call|use|invoke|run|execute) (the )?[a-z0-9_.-]+ tool\b|\b(instead|now) (call|use|invoke|run) (the )?[a-z0-9_.-]+(_[a-z0-9]+)+\b|\b(call|use|invoke|run) (the )?[a-z0-9_.-]+ tool instead\b`)},
	{"orders a destructive action", []string{"delete", "remove", "wipe", "erase", "destroy", "rm -rf"}, regexp.MustCompile(`\b(delete|remove|wipe|erase|destroy) (all|every|the entire|everything)\b[^.]{0,30}\b(files?|data|repos?|repositor(y|ies)|records|database|directories|home)\b|\brm -rf (/|~|\*)`)},
}

// exfiltration is text asking to move data out: a send verb aimed at an
// address, or a credential file named with a read verb.
var exfiltration = []phrase{
	{"asks to send data to an address", []string{"://", "@"}, regexp.MustCompile(`\b(sends?|sent|posts?|posted|uploads?|uploaded|forwards?|forwarded|transmits?|transmitted|exfiltrates?|exfiltrated|emails?|emailed|leaks?|leaked|copy|copied|pipes?|piped|submits?|submitted)\b[^\n]{0,80}?\b(to|at|into)\b[^\n]{0,20}?(https?://|ftp://|[a-z0-9._%+-]+@[a-z0-9.-]+\.[a-z]{2,})`)},
	{"asks to read a credential file", []string{".ssh", "id_rsa", "id_ed25519", ".aws", "/etc/shadow", ".env", ".netrc", ".npmrc", ".pgpass", ".kube", ".docker", "private key"}, regexp.MustCompile(`\b(read|cat|open|include|attach|load|get|fetch|send|pass|append)\b[^\n]{0,40}?(~/\.ssh|id_rsa|id_ed25519|\.aws/credentials|/etc/shadow|\.env\b|\.netrc|\.npmrc|\.pgpass|\.kube/config|\.docker/config\.json|private key)`)},
}

// Windows around a hint the regexp reads: every phrase's match spans less
// than windowBack before its hint and windowAhead after it.
const (
	windowBack  = 200
	windowAhead = 240
	// maxWindows bounds the windows one phrase reads in one text: text
	// that repeats a hint past it is judged on its first maxWindows.
	maxWindows = 256
)

// match is the first phrase of ps in folded text t, and the part of t that
// matched; "" when none does. Linear in t: each phrase's regexp reads a
// bounded window around each of its hints.
func match(ps []phrase, t string) (why, trigger string) {
	for _, p := range ps {
		if m := p.find(t); m != "" {
			return p.why, strings.TrimSpace(m)
		}
	}
	return "", ""
}

func (p phrase) find(t string) string {
	windows := 0
	for _, h := range p.hints {
		for from := 0; windows < maxWindows; windows++ {
			i := strings.Index(t[from:], h)
			if i < 0 {
				break
			}
			i += from
			a, b := max(0, i-windowBack), min(len(t), i+len(h)+windowAhead)
			if loc := p.re.FindStringIndex(t[a:b]); loc != nil {
				return t[a+loc[0] : a+loc[1]]
			}
			from = i + len(h)
			if from >= len(t) {
				break
			}
		}
	}
	return ""
}

// suspicious judges text as the model reads it: t itself, folded, then
// whatever it hides in base64, hex or URL escapes, folded. It returns the
// first phrase of ps found and what triggered it ("decoded" says it was
// hidden).
func suspicious(ps []phrase, s string) (why, trigger string) {
	if why, trig := match(ps, Fold(s)); why != "" {
		return why, trig
	}
	for _, d := range Decoded(s) {
		if why, trig := match(ps, Fold(d)); why != "" {
			return why + " (hidden in an encoded run)", trig
		}
	}
	return "", ""
}
