package export

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/tracebridge/tracebridge/config"
	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/hub"
	"github.com/tracebridge/tracebridge/hub/hubtest"
	"github.com/tracebridge/tracebridge/identity"
	"github.com/tracebridge/tracebridge/internal/golden"
	"github.com/tracebridge/tracebridge/internal/loopback"
	"github.com/tracebridge/tracebridge/projections"
	"github.com/tracebridge/tracebridge/store"
)

// ecsField is one field of the published ECS definition (ecs_flat).
type ecsField struct {
	Type          string   `json:"type"`
	Normalize     []string `json:"normalize"`
	ObjectType    string   `json:"object_type"`
	Required      bool     `json:"required"`
	AllowedValues []struct {
		Name               string   `json:"name"`
		ExpectedEventTypes []string `json:"expected_event_types"`
	} `json:"allowed_values"`
}

// ecsDefinition is Elastic's published ECS field definitions, as the npm
// package @elastic/ecs (generated from elastic/ecs, pinned by
// testdata/ecs/package-lock.json, installed by `make deps`) exports them.
func ecsDefinition(t *testing.T) (string, map[string]ecsField) {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("testdata", "ecs", "node_modules", "@elastic", "ecs"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); err != nil {
		if testing.Short() {
			// make unit is Go alone on a fresh clone; make test installs
			// the definition and runs this (issue 46).
			t.Skip("the ECS definition is installed by make deps: make test checks against it")
		}
		t.Fatalf("the ECS definition is not installed (%v): run make deps (it runs npm ci in export/testdata/ecs)", err)
	}
	out, err := exec.Command("node", "-e", `const e = require(process.argv[1]); process.stdout.write(JSON.stringify({version: e.EcsVersion, fields: e.EcsFlat}))`, dir).Output()
	if err != nil {
		t.Fatalf("node could not read the ECS definition: %v", err)
	}
	var def struct {
		Version string              `json:"version"`
		Fields  map[string]ecsField `json:"fields"`
	}
	if err := json.Unmarshal(out, &def); err != nil {
		t.Fatal(err)
	}
	if len(def.Fields) < 1000 {
		t.Fatalf("the ECS definition has %d fields: not the published one", len(def.Fields))
	}
	return def.Version, def.Fields
}

// ecsProblems is what doc breaks of the ECS definition fields: a field it
// does not define, a value not of the field's type, an array where none is
// expected, a value outside a field's allowed values, an event.type no
// event.category expects, a required field missing.
func ecsProblems(fields map[string]ecsField, doc map[string]any) []string {
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	present := map[string]bool{}
	var walk func(prefix string, v any)
	walk = func(name string, v any) {
		f, defined := fields[name]
		if m, ok := v.(map[string]any); ok && (!defined || f.Type == "object" && f.ObjectType == "") {
			for k, child := range m {
				if name != "" {
					k = name + "." + k
				}
				walk(k, child)
			}
			return
		}
		present[name] = true
		if !defined {
			bad("%s: not an ECS field", name)
			return
		}
		values := []any{v}
		if list, ok := v.([]any); ok {
			if !slices.Contains(f.Normalize, "array") {
				bad("%s: an array, where ECS expects one value", name)
			}
			values = list
		} else if slices.Contains(f.Normalize, "array") {
			bad("%s: one value, where ECS expects an array", name)
		}
		for _, v := range values {
			if err := ecsTypeCheck(f, v); err != nil {
				bad("%s: %v", name, err)
			}
			if len(f.AllowedValues) > 0 && !slices.ContainsFunc(f.AllowedValues, func(a struct {
				Name               string   `json:"name"`
				ExpectedEventTypes []string `json:"expected_event_types"`
			}) bool {
				return a.Name == v
			}) {
				bad("%s: %v is not one of its allowed values", name, v)
			}
		}
	}
	walk("", doc)
	expected := map[string]bool{}
	for _, c := range asStrings(lookup(doc, "event.category")) {
		for _, a := range fields["event.category"].AllowedValues {
			if a.Name == c {
				for _, ty := range a.ExpectedEventTypes {
					expected[ty] = true
				}
			}
		}
	}
	for _, ty := range asStrings(lookup(doc, "event.type")) {
		if !expected[ty] {
			bad("event.type %s: no event.category of the document expects it", ty)
		}
	}
	for name, f := range fields {
		if f.Required && !present[name] {
			bad("%s: required, missing", name)
		}
	}
	sort.Strings(problems)
	return problems
}

func ecsTypeCheck(f ecsField, v any) error {
	switch f.Type {
	case "keyword", "wildcard", "constant_keyword", "match_only_text", "text":
		if _, ok := v.(string); !ok {
			return fmt.Errorf("%v is not a string (%s)", v, f.Type)
		}
	case "long", "integer", "short", "byte", "unsigned_long":
		n, ok := v.(float64)
		if !ok || n != math.Trunc(n) {
			return fmt.Errorf("%v is not an integer (%s)", v, f.Type)
		}
	case "float", "scaled_float", "double", "half_float":
		if _, ok := v.(float64); !ok {
			return fmt.Errorf("%v is not a number (%s)", v, f.Type)
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			return fmt.Errorf("%v is not a boolean", v)
		}
	case "date":
		s, _ := v.(string)
		if _, err := time.Parse(time.RFC3339Nano, s); err != nil {
			return fmt.Errorf("%v is not a date: %v", v, err)
		}
	case "ip":
		s, _ := v.(string)
		if _, err := netip.ParseAddr(s); err != nil {
			return fmt.Errorf("%v is not an IP address", v)
		}
	case "object":
		m, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("%v is not an object", v)
		}
		for k, x := range m {
			if _, ok := x.(string); f.ObjectType == "keyword" && !ok {
				return fmt.Errorf("%s: %v is not a keyword", k, x)
			}
		}
	default:
		return fmt.Errorf("type %s: the check does not know it", f.Type)
	}
	return nil
}

func lookup(doc map[string]any, field string) any {
	var v any = doc
	for _, p := range strings.Split(field, ".") {
		m, _ := v.(map[string]any)
		v = m[p]
	}
	return v
}

func asStrings(v any) []string {
	var out []string
	switch x := v.(type) {
	case string:
		out = append(out, x)
	case []any:
		for _, s := range x {
			out = append(out, fmt.Sprint(s))
		}
	}
	return out
}

// The check finds what breaks the definition: it is what the export's
// documents pass.
func TestECSCheckFindsProblems(t *testing.T) {
	_, fields := ecsDefinition(t)
	doc := map[string]any{
		"ecs":         map[string]any{"version": "9.4.0"},
		"event":       map[string]any{"kind": "gossip", "category": []any{"web"}, "type": []any{"denied"}, "sequence": 1.5},
		"tracebridge": map[string]any{"seq": 1.0},
		"labels":      map[string]any{"n": 2.0},
		"related":     map[string]any{"hash": "one"},
	}
	want := []string{
		"@timestamp: required, missing",
		"event.kind: gossip is not one of its allowed values",
		"event.sequence: 1.5 is not an integer (long)",
		"event.type denied: no event.category of the document expects it",
		"labels: n: 2 is not a keyword",
		"related.hash: one value, where ECS expects an array",
		"tracebridge.seq: not an ECS field",
	}
	if got := ecsProblems(fields, doc); !slices.Equal(got, want) {
		t.Fatalf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// Every kind the audit export writes becomes an ECS document that fits the
// published ECS definition of the version it claims: fields it defines,
// of their types, categorization values it allows, the event types its
// categories expect. The events are made by the constructors the bridge,
// the UI and the hub record them with.
func TestAuditAsECSFitsTheSchema(t *testing.T) {
	version, fields := ecsDefinition(t)
	if version != ECSVersion {
		t.Fatalf("the definition installed is ECS %s, the documents claim %s", version, ECSVersion)
	}
	ctx := context.Background()
	node := hubtest.Open(t, hub.Options{Dir: hub.DataDir(filepath.Join(t.TempDir(), "data")), Role: hub.Elect, Name: "ecs-test"})
	clock := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	em := events.NewEmitter(node, events.EmitterOptions{Payloads: node, Now: func() time.Time { clock = clock.Add(time.Second); return clock }})
	emitAuditKinds(t, em)
	if err := em.FlushAll(ctx); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := NewAudit(node, &out, time.Time{}, ECSFormat).UpToHead(ctx, 1); err != nil {
		t.Fatal(err)
	}
	kinds := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var doc map[string]any
		if err := json.Unmarshal([]byte(l), &doc); err != nil {
			t.Fatalf("not JSON: %v\n%s", err, l)
		}
		if p := ecsProblems(fields, doc); len(p) > 0 {
			t.Errorf("%s does not fit ECS %s:\n  %s", lookup(doc, "event.action"), version, strings.Join(p, "\n  "))
		}
		kinds[lookup(doc, "event.action").(string)] = true
		var native AuditLine
		if err := json.Unmarshal([]byte(lookup(doc, "event.original").(string)), &native); err != nil || native.Kind == "" || native.Checkpoint == nil {
			t.Errorf("event.original is not the native line: %v", err)
		}
	}
	for k := range auditKinds {
		if !kinds[k] {
			t.Errorf("no %s in the export", k)
		}
	}
	golden.Check(t, "audit-ecs.jsonl", maskedEscaped(masked(out.String())))
}

var signedEscapedRE = regexp.MustCompile(`\\"(publicKey|signature)\\":\\"[^"\\]*\\"|(\\"hash\\":\\"<sha256>\\",\\"time\\":)\\"[^"\\]*\\"`)

// derivedTraceRE is a trace id derived from a request id (the one the
// client sent, 4bf92f…, stays).
var derivedTraceRE = regexp.MustCompile(`"trace":\{"id":"[0-9a-f]{32}"\}`)

const clientTrace = "4bf92f3577b34da6a3ce929d0e0e4736"

// maskedEscaped masks the checkpoint's key, signature and time in a
// native line quoted as a string (event.original).
func maskedEscaped(s string) string {
	s = derivedTraceRE.ReplaceAllStringFunc(s, func(m string) string {
		if strings.Contains(m, clientTrace) {
			return m
		}
		return `"trace":{"id":"<derived from the request id>"}`
	})
	return signedEscapedRE.ReplaceAllStringFunc(s, func(m string) string {
		if strings.HasPrefix(m, `\"hash`) {
			return `\"hash\":\"<sha256>\",\"time\":\"<checkpoint time>\"`
		}
		k, _, _ := strings.Cut(m, ":")
		return k + `:\"<` + strings.Trim(k, `\"`) + `>\"`
	})
}

// requester is who made the approved call ([auth]): an ECS decision names
// them as user.target, the decider as user.
var requester = identity.User{Subject: "u-alice", Issuer: "https://idp.example", Name: "alice", Email: "alice@example.com", Groups: []string{"platform"}, ClientID: "team-mcp"}.Attrs()

// emitAuditKinds records one event of each kind the audit export writes.
func emitAuditKinds(t *testing.T, em *events.Emitter) {
	req := events.NewID()
	tp := "00-" + clientTrace + "-00f067aa0ba902b7-01"
	em.Emit(events.Event{Kind: events.KindExecutorAudit, RequestID: req, Traceparent: tp, Outcome: events.OK, Attrs: events.A(events.AttrTool, "fs__write_file",
		events.AttrEnvelope, `{"tool":"fs__write_file","requestId":"`+req.String()+`","operationId":"x","user":{"sub":"u-alice","iss":"https://idp.example","name":"alice","email":"alice@example.com","groups":["platform","approvers"],"client_id":"team-mcp"},"descriptor":{"name":"write_file","source":"upstream:fs"},"policy":{"allowed":true,"reason":"capabilities granted"},"approval":{"required":true,"argsHash":"`+strings.Repeat("a", 64)+`","decision":"approve","by":"uid 1000 (alice)"},"args":"{}","outcome":"ok","classification":{"category":"write","severity":"info","risk":"high","outcome":"ok"},"durationMs":12.5}`)})
	em.Emit(events.Event{Kind: events.KindExecutorAudit, RequestID: events.NewID(), Outcome: events.Denied, Code: events.CodePolicyDenied, Attrs: events.A(events.AttrTool, "shell",
		events.AttrEnvelope, `{"tool":"shell","policy":{"allowed":false,"reason":"denied by [policy] deny"},"outcome":"denied","code":"PolicyDenied","classification":{"category":"exec","severity":"warning","risk":"high","outcome":"denied"},"durationMs":0.2}`)})
	for _, kind := range []string{events.KindMCPHTTPRejected, events.KindUIRejected} {
		r := loopback.NewRefusals(kind, nil, em.Emit)
		r.Record(events.CodeUnauthenticated, "a", map[string]string{"method": "POST", "path": "/mcp", "host": "127.0.0.1:7777", "origin": "", "remote": "127.0.0.1:50123", "error": "no bearer token"})
		r.Record(events.CodeForeignOrigin, "b", map[string]string{"method": "POST", "path": "/mcp", "host": "127.0.0.1:7777", "origin": "https://evil.example", "remote": "127.0.0.1:50124", "error": "Origin is not this server"})
		r.ForeignPeer("127.0.0.1:50125", 1001, errors.New("peer uid 1001 is not this user"))
	}
	em.Emit(events.Event{Kind: events.KindStreamRefused, Outcome: events.Denied, Code: events.CodeOriginMismatch, Attrs: events.A("subject", "tb.events.x", "error", "claims another origin")})
	em.Emit(events.Event{Kind: events.KindAppendRejected, Outcome: events.Error, Code: events.CodeChainBroken, Attrs: events.A("subject", "tb.append", "bytes", "120", "error", "prev does not match")})
	pin := func(kind string, o events.Outcome, c events.Code) {
		em.Emit(events.Event{Kind: kind, RequestID: req, Outcome: o, Code: c, Attrs: events.A(events.AttrServer, "fs", projections.AttrUpTool, "write_file", projections.AttrExposed, "fs__write_file",
			projections.AttrHash, strings.Repeat("b", 64), projections.AttrDescriptor, `{"name":"write_file"}`)})
	}
	pin(events.KindUpstreamToolPinned, events.OK, "")
	pin(events.KindUpstreamToolChanged, events.Denied, events.CodeToolChanged)
	pin(events.KindUpstreamToolRemoved, events.OK, "")
	em.Emit(projections.Acceptance(events.NewID(), projections.Pin{Server: "fs", Tool: "write_file", Name: "fs__write_file", Hash: strings.Repeat("b", 64), Pending: strings.Repeat("c", 64)}, "uid 1000 (alice)", "reviewed the new description"))
	em.Emit(events.Event{Kind: events.KindUpstreamRefused, RequestID: req, Outcome: events.Denied, Code: events.CodeToolChanged, Attrs: events.A(projections.AttrUpTool, "write_file", "error", "the tool changed since it was pinned")})
	em.Emit(events.Event{Kind: events.KindUpstreamOfferRefused, Outcome: events.Denied, Code: events.CodeAmbiguous, Attrs: events.A(events.AttrServer, "fs", "uri", "file:///etc/passwd", "error", "another server serves it")})
	em.Emit(config.LoadedEvent("/home/alice/.config/tracebridge/tracebridge.toml", []byte("[policy]\ndeny = [\"shell\"]\n"), nil))
	em.Emit(config.LoadedEvent("/home/alice/.config/tracebridge/tracebridge.toml", []byte("[policy\n"), errors.New("line 1: unterminated table")))
	wait := projections.Approval{ID: events.NewID().String(), Tool: "fs__write_file", RequestID: req, ArgsHash: strings.Repeat("a", 64), Requested: time.Date(2026, 11, 26, 11, 59, 0, 0, time.UTC)}
	decided := projections.Decision(wait, events.Approve, "uid 1000 (carol)", "looks right", time.Date(2026, 11, 26, 12, 0, 30, 0, time.UTC))
	for i := 0; i+1 < len(requester); i += 2 { // the requester, as the front door tags a run's events
		decided.Attrs.Set(requester[i], requester[i+1])
	}
	carol := identity.User{Subject: "u-carol", Issuer: "https://idp.example", Name: "carol", Email: "carol@example.com", Groups: []string{"approvers"}}.AttrsAs(identity.DeciderPrefix)
	for i := 0; i+1 < len(carol); i += 2 { // the decider, as the UI signed her in
		decided.Attrs.Set(carol[i], carol[i+1])
	}
	em.Emit(decided)
	wait.ID = events.NewID().String()
	em.Emit(projections.Decision(wait, events.Deny, "uid 1000 (alice)", "", time.Time{}))
	for _, kind := range []string{events.KindProposalApproved, events.KindProposalRejected} {
		em.Emit(events.Event{Kind: kind, RequestID: req, Outcome: events.OK, Attrs: events.A(events.AttrProposal, "p-1", "by", "uid 1000 (alice)")})
	}
	em.Emit(config.WeakenedEvent("/home/alice/.config/tracebridge/tracebridge.toml", []string{"[approval] mode prompt → allow"}))
	guardAttrs := func(rule, action string) events.Attrs {
		return events.A(events.AttrServer, "fs", events.AttrRule, rule, "action", action, "pack", "tracebridge/default@1", "trigger", "[REDACTED:aws-key:5db1bb18]",
			"findings", `[{"rule":"`+rule+`","action":"`+action+`","why":"a secret in the result"}]`)
	}
	em.Emit(events.Event{Kind: events.KindGuardArgs, RequestID: req, Outcome: events.Denied, Code: events.CodePolicyDenied, Attrs: guardAttrs("private-destination", "block")})
	em.Emit(events.Event{Kind: events.KindGuardResult, RequestID: req, Outcome: events.OK, Attrs: guardAttrs("result-secret", "redact")})
	pin(events.KindUpstreamToolFlagged, events.Denied, events.CodeToolFlagged)
	em.Emit(events.Event{Kind: events.KindUpstreamStarted, Outcome: events.OK, Attrs: events.A(events.AttrServer, "fs", "command", "npx -y @modelcontextprotocol/server-filesystem /work",
		"pid", "4242", "uid", "1000", "env", "HOME,PATH", "sandbox", "landlock v7", "sandboxWrite", "/work,/data/servers/fs/state,/data/servers/fs/tmp", "sandboxNetwork", "none", "executable", "/usr/bin/node", "executableSha256", strings.Repeat("e", 64))})
	em.Emit(hub.ArchiveEvent(store.Segment{First: 1, Last: 40, File: "seg-1-40.tbarchive", SHA256: strings.Repeat("d", 64)}, "/data/archive", "retention"))
}
