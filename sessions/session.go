package sessions

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/export"
	"github.com/tracebridge/tracebridge/identity"
	"github.com/tracebridge/tracebridge/pipe"
)

// SessionSchema names the recorded-session format this build reads and
// writes. A file of another schema is refused, not guessed at.
const SessionSchema = "tracebridge.session/v1"

// MaxSessionLine caps one line of a session file: a step holding an answer
// as long as the log keeps whole, JSON-escaped, with room to spare.
const MaxSessionLine = 64 << 20

// Step kinds.
const (
	StepClient   = "client"   // a JSON-RPC request the client sent
	StepNotify   = "notify"   // a notification the client sent
	StepHost     = "host"     // an answer the host gave over the pipe
	StepOperator = "operator" // a pipe command an operator sent (a proposal decision)
	StepUpstream = "upstream" // an answer an upstream MCP server gave to a tools/call
	StepTool     = "tool"     // the result a recorded tool (a discovered one) gave
)

// Session is a recorded session: everything needed to re-drive it and the
// evidence it left, so a re-drive can be compared with it.
type Session struct {
	Header SessionHeader
	Steps  []Step
}

// SessionHeader is the first line of a session file.
type SessionHeader struct {
	Schema          string    `json:"schema"`
	Name            string    `json:"name"`
	SessionID       events.ID `json:"sessionId,omitzero"` // in the log it was exported from
	Client          string    `json:"client,omitempty"`
	ProtocolVersion string    `json:"protocolVersion,omitempty"`
	// User is who the client was, as the front door authenticated them
	// ([auth]): a re-drive runs the session as them, so rules by user
	// decide as they did.
	User        *identity.User `json:"user,omitempty"`
	Recorded    time.Time      `json:"recorded"` // a re-drive's clock stands still here
	Tracebridge string         `json:"tracebridge"`
	// Config is the tracebridge.toml in force ("" for the defaults).
	Config string `json:"config"`
	// Redacted says Config holds values the log redacted (credentials,
	// as [REDACTED:…] markers): a re-drive runs no server, so it does not
	// need them.
	Redacted bool `json:"redacted,omitempty"`
	// Host says a workspace host answered; a re-drive without one leaves
	// the pipe unanswered, as the recording found it.
	Host bool `json:"host"`
	// Pipe is where the bridge looked for the workspace host: an answer
	// that names it names the re-drive's path instead, which is not drift.
	Pipe string `json:"pipe,omitempty"`
	// Upstreams are the tool descriptors of each upstream server the
	// session used, as pinned: a re-drive serves them from the recording.
	Upstreams map[string][]json.RawMessage `json:"upstreams,omitempty"`
	// Offers are what each upstream server listed besides tools, as it
	// named them: a re-drive lists the same.
	Offers map[string]UpstreamOffers `json:"offers,omitempty"`
	// Tools are the descriptors of the recorded tools the session called
	// (discovered tools), by id: a re-drive answers for them.
	Tools map[string]json.RawMessage `json:"tools,omitempty"`
	Steps int                        `json:"steps"`
}

// UpstreamOffers are an upstream's prompts, resources and resource
// templates as it listed them (JSON arrays of the protocol's objects).
type UpstreamOffers struct {
	Prompts   json.RawMessage `json:"prompts,omitempty"`
	Resources json.RawMessage `json:"resources,omitempty"`
	Templates json.RawMessage `json:"templates,omitempty"`
}

// Step is one line after the header.
type Step struct {
	Step    string          `json:"step"`
	Method  string          `json:"method,omitempty"`  // client, notify
	Params  json.RawMessage `json:"params,omitempty"`  // client, notify
	Command string          `json:"command,omitempty"` // host, operator
	Payload json.RawMessage `json:"payload,omitempty"` // operator
	Answer  *pipe.Answer    `json:"answer,omitempty"`  // host
	// Server names the upstream of an upstream step; Command is its tool,
	// Params the arguments the bridge sent and Result what it answered (a
	// CallToolResult, or {"error": {"code", "message"}}).
	Server string          `json:"server,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	// RequestID is the request id the step had in the recording (client
	// steps): a later step that names it (trace_replay) gets the re-drive's
	// id for the same step instead.
	RequestID events.ID `json:"requestId,omitzero"`
	// Decisions are the operators' answers to the step's approval prompts,
	// in order (client steps): a re-drive gives them again.
	Decisions []Decision `json:"decisions,omitempty"`
	// Expect is the evidence the step left in the recording, within the
	// re-driven scope (client and operator steps).
	Expect []Crossing `json:"expect,omitempty"`
	// Roots is what the client answered when the bridge asked for its
	// roots during the step (client steps): a JSON array of URIs, or a
	// string, the error. A re-drive answers the same.
	Roots json.RawMessage `json:"roots,omitempty"`
	// Asks are what the upstream asked the client during the call
	// (upstream steps: sampling, elicitation, roots) and what the client
	// answered: a re-drive's upstream asks again, its client answers again.
	Asks []Ask `json:"asks,omitempty"`
	// Root is the workspace root of the host that answered (host steps),
	// when the bridge chose it among several.
	Root string `json:"root,omitempty"`
	// Reply is what the client was answered (client steps):
	// {"result": …} or {"error": {"code", "message"}}. A re-drive's answer
	// must agree with it, ids, times and _meta aside.
	Reply json.RawMessage `json:"reply,omitempty"`
}

// Ask is a request an upstream sent the client through the bridge, and
// the client's answer: {"result": …} or {"error": {"code", "message"}}.
type Ask struct {
	Method string          `json:"method"`
	Params json.RawMessage `json:"params,omitempty"`
	Answer json.RawMessage `json:"answer"`
	// Bridge says the bridge answered for the client (it lacks the
	// capability, or no call of it was in flight): not the client's answer.
	Bridge bool `json:"bridge,omitempty"`
}

// Decision is an operator's answer to an approval prompt.
type Decision struct {
	Decision string `json:"decision"` // approve | deny
	By       string `json:"by"`
	Reason   string `json:"reason,omitempty"`
}

// Crossing is what a drift check compares of one event.
type Crossing struct {
	Kind     string          `json:"kind"`
	Boundary events.Boundary `json:"boundary"`
	From     string          `json:"from"`
	To       string          `json:"to"`
	Outcome  events.Outcome  `json:"outcome"`
	Code     events.Code     `json:"code,omitempty"`
}

func (c Crossing) String() string {
	s := c.Kind + " " + c.From + "→" + c.To + " " + string(c.Outcome)
	if c.Code != "" {
		s += " " + string(c.Code)
	}
	return s
}

// crossingOf is e as a drift check sees it.
func crossingOf(e *events.Event) Crossing {
	return Crossing{Kind: e.Kind, Boundary: e.Boundary, From: e.From, To: e.To, Outcome: e.Outcome, Code: e.Code}
}

// outOfScopeKinds are upstream events that depend on the bridge's history,
// not on the session: whether the upstream was running already, what was
// pinned before, and progress that arrives as fast as the upstream runs.
var outOfScopeKinds = map[string]bool{
	events.KindUpstreamStarted: true, events.KindUpstreamExited: true, events.KindUpstreamConnected: true,
	events.KindUpstreamNotification: true, events.KindUpstreamToolPinned: true, events.KindUpstreamToolChanged: true,
	events.KindUpstreamToolRemoved: true, events.KindUpstreamToolAccepted: true, events.KindUpstreamOffers: true,
}

// inScopeEvent says whether a re-drive reproduces e.
func inScopeEvent(e *events.Event) bool { return inScope(e.Boundary) && !outOfScopeKinds[e.Kind] }

// inScope says whether a re-drive reproduces events of boundary b.
func inScope(b events.Boundary) bool {
	for _, x := range export.ScopeExclusions {
		if b == x {
			return false
		}
	}
	return true
}

// SessionError is a session file that cannot be used, with the line.
type SessionError struct {
	Line int
	Msg  string
}

func (e *SessionError) Error() string {
	if e.Line == 0 {
		return "session file: " + e.Msg
	}
	return fmt.Sprintf("session file line %d: %s", e.Line, e.Msg)
}

// DecodeSession reads a session file. It refuses other schemas, unknown
// steps and fields, truncated files (fewer steps than the header says, a
// last line cut short) and trailing data.
func DecodeSession(r io.Reader) (*Session, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), MaxSessionLine)
	var s Session
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			return nil, &SessionError{line, "empty line"}
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if line == 1 {
			var probe struct {
				Schema string `json:"schema"`
			}
			if err := json.Unmarshal(b, &probe); err != nil {
				return nil, &SessionError{line, "not a session header (corrupt or truncated JSON): " + err.Error()}
			}
			if probe.Schema != SessionSchema {
				return nil, &SessionError{line, fmt.Sprintf("schema %q: this build reads %s; re-export the session with this build or use the build that wrote it", probe.Schema, SessionSchema)}
			}
			if err := dec.Decode(&s.Header); err != nil {
				return nil, &SessionError{line, "header: " + err.Error()}
			}
			if s.Header.Steps < 0 || s.Header.Steps > 1_000_000 {
				return nil, &SessionError{line, fmt.Sprintf("header says %d steps", s.Header.Steps)}
			}
			continue
		}
		var st Step
		if err := dec.Decode(&st); err != nil {
			return nil, &SessionError{line, "corrupt or truncated step: " + err.Error()}
		}
		if dec.More() {
			return nil, &SessionError{line, "more than one JSON value on the line"}
		}
		if err := st.check(); err != nil {
			return nil, &SessionError{line, err.Error()}
		}
		s.Steps = append(s.Steps, st)
	}
	if err := sc.Err(); errors.Is(err, bufio.ErrTooLong) {
		return nil, &SessionError{line + 1, fmt.Sprintf("%v: a line of a session file holds at most %d MiB", events.CodeTooLarge, MaxSessionLine>>20)}
	} else if err != nil {
		return nil, &SessionError{line + 1, err.Error()}
	}
	if line == 0 {
		return nil, &SessionError{0, "empty file"}
	}
	if len(s.Steps) != s.Header.Steps {
		return nil, &SessionError{0, fmt.Sprintf("the header says %d steps but the file holds %d: it is truncated or was edited", s.Header.Steps, len(s.Steps))}
	}
	return &s, nil
}

func (st *Step) check() error {
	switch st.Step {
	case StepClient, StepNotify:
		if st.Method == "" {
			return errors.New(st.Step + " step without a method")
		}
		if len(st.Params) > 0 && !json.Valid(st.Params) {
			return errors.New("params are not JSON")
		}
		if len(st.Reply) > 0 && !json.Valid(st.Reply) {
			return errors.New("reply is not JSON")
		}
		if len(st.Roots) > 0 {
			var uris []string
			var msg string
			if json.Unmarshal(st.Roots, &uris) != nil && json.Unmarshal(st.Roots, &msg) != nil {
				return errors.New("roots are neither a list of URIs nor an error message")
			}
		}
	case StepHost:
		if st.Command == "" || st.Answer == nil {
			return errors.New("host step needs a command and an answer")
		}
	case StepOperator:
		if st.Command == "" {
			return errors.New("operator step without a command")
		}
	case StepTool:
		if st.Command == "" || !json.Valid(st.Result) {
			return errors.New("tool step needs a tool (command) and a JSON result")
		}
	case StepUpstream:
		if st.Server == "" || st.Command == "" || !json.Valid(st.Result) || len(st.Params) > 0 && !json.Valid(st.Params) {
			return errors.New("upstream step needs a server, a tool (command), JSON params and a JSON result")
		}
	default:
		return fmt.Errorf("unknown step %q (want client, notify, host, operator, upstream or tool)", st.Step)
	}
	return nil
}

// Encode writes s as a session file: the header, then one step per line.
func (s *Session) Encode(w io.Writer) error {
	s.Header.Schema, s.Header.Steps = SessionSchema, len(s.Steps)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(&s.Header); err != nil {
		return err
	}
	for i := range s.Steps {
		if err := enc.Encode(&s.Steps[i]); err != nil {
			return err
		}
	}
	return nil
}
