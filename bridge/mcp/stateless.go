package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/identity"
)

// The 2026-07-28 protocol's own JSON-RPC error codes (SEP-2575).
const (
	codeHeaderMismatch     = -32020 // MCP-Protocol-Version is missing or disagrees with _meta
	codeMissingCapability  = -32021 // the request needs a capability the client did not declare
	codeUnsupportedVersion = -32022 // _meta names a version the server does not speak
)

// statelessVersions are the per-request protocol versions the front door
// serves without a session.
var statelessVersions = []string{"2026-07-28"}

// sessionEra are the revisions of the initialize/session lifecycle: a
// sessionless request that names one in its header and carries no _meta
// is theirs (an initialize, a notification), not a stateless request.
var sessionEra = []string{"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"}

// statelessMeta is the part of a request the stateless checks read.
type statelessMeta struct {
	// present: the request carries params._meta at all.
	present  bool
	version  string
	hasCaps  bool
	rawVerOK bool // the version is a string
}

// frontMessage is what the front door reads of a POST body, in one pass:
// the id and method it routes by, and params._meta (its keys matched
// exactly, as the SDK matches them) for the progress token and the
// stateless checks.
type frontMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	} `json:"params"`
}

func readFrontMessage(body []byte) (frontMessage, error) {
	var m frontMessage
	err := json.Unmarshal(body, &m)
	return m, err
}

// statelessMeta is what the stateless checks read of the message's _meta.
func (m *frontMessage) statelessMeta() statelessMeta {
	meta := m.Params.Meta
	if meta == nil {
		return statelessMeta{}
	}
	sm := statelessMeta{present: true}
	if v, ok := meta[sdk.MetaKeyProtocolVersion]; ok {
		sm.rawVerOK = json.Unmarshal(v, &sm.version) == nil && sm.version != ""
	}
	if c, ok := meta[sdk.MetaKeyClientCapabilities]; ok && len(c) > 0 && c[0] == '{' {
		sm.hasCaps = true
	}
	return sm
}

// statelessRequest reports whether a request without Mcp-Session-Id is of
// the stateless protocol (it names a version in the header or carries
// _meta, and is not a session-era request without _meta).
func statelessRequest(header string, m statelessMeta) bool {
	if header == "" && !m.present {
		return false
	}
	return m.present || !slices.Contains(sessionEra, header)
}

// statelessRefusal is why the front door refuses a stateless request
// before any session sees it: a JSON-RPC error, sent with HTTP 400.
type statelessRefusal struct {
	code int64
	msg  string
	data any
}

// checkStateless checks a stateless request's transport header and
// per-request _meta as SEP-2575 orders: the header is there, _meta names a
// version and the client's capabilities, the two agree, and the version
// is one the front door speaks.
func checkStateless(header string, m statelessMeta) *statelessRefusal {
	switch {
	case header == "":
		return &statelessRefusal{code: codeHeaderMismatch, msg: "the MCP-Protocol-Version header is missing: a request without a session names its protocol version in the header and in _meta"}
	case !m.present || !m.rawVerOK || !m.hasCaps:
		return &statelessRefusal{code: jsonrpc.CodeInvalidParams, msg: fmt.Sprintf("invalid params: a request without a session carries _meta %q and %q", sdk.MetaKeyProtocolVersion, sdk.MetaKeyClientCapabilities)}
	case header != m.version:
		return &statelessRefusal{code: codeHeaderMismatch, msg: fmt.Sprintf("the MCP-Protocol-Version header (%s) disagrees with _meta's protocol version (%s)", header, m.version)}
	case !slices.Contains(statelessVersions, m.version):
		return &statelessRefusal{code: codeUnsupportedVersion, msg: "unsupported protocol version",
			data: map[string]any{"supported": statelessVersions, "requested": m.version}}
	}
	return nil
}

// stateless serves a request of the 2026-07-28 protocol without a
// session: checked as sent (refused with HTTP 400 and recorded), then a
// session of its own, ended once it is answered; initialize is such a
// request too (the protocol removed it: 404), never a kept session.
func (f *front) stateless(w http.ResponseWriter, r *http.Request, body, id, token json.RawMessage, call bool, sm statelessMeta) {
	if !call {
		w.WriteHeader(http.StatusAccepted) // a notification outside a session: nothing to tell
		return
	}
	if ref := checkStateless(r.Header.Get("Mcp-Protocol-Version"), sm); ref != nil {
		f.opts.Refusals.Record(events.CodeInvalidRequest, r.Method+" "+r.URL.Path+" "+fmt.Sprint(ref.code), map[string]string{
			"method": r.Method, "path": r.URL.Path, "remote": r.RemoteAddr, "rpcCode": fmt.Sprint(ref.code), "error": ref.msg})
		writeRPCError(w, http.StatusBadRequest, id, ref.code, ref.msg, ref.data)
		return
	}
	owner, _ := identity.From(r.Context())
	sess, err := f.open(false, owner)
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	sess.stateless = true
	sess.post(w, r, body, id, token, call)
	sess.close()
}

// writeRPCError answers request id with a JSON-RPC error and HTTP status.
func writeRPCError(w http.ResponseWriter, status int, id json.RawMessage, code int64, msg string, data any) {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	e := map[string]any{"code": code, "message": msg}
	if data != nil {
		e["data"] = data
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": e})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b)
}

// statelessStatus is the HTTP status of a stateless request's answer: an
// unknown (or removed) method is 404, a request refused as sent 400,
// anything else 200.
func statelessStatus(line []byte) int {
	if !bytes.Contains(line, []byte(`"error"`)) { // the SDK writes the key as is: an answer without the word is a result, read no further
		return http.StatusOK
	}
	var m struct {
		Error *struct {
			Code int64 `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(line, &m) != nil || m.Error == nil {
		return http.StatusOK
	}
	switch m.Error.Code {
	case jsonrpc.CodeMethodNotFound:
		return http.StatusNotFound
	case jsonrpc.CodeInvalidParams, codeHeaderMismatch, codeMissingCapability, codeUnsupportedVersion:
		return http.StatusBadRequest
	}
	return http.StatusOK
}
