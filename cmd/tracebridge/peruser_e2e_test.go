package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/identity"
	"github.com/tracebridge/tracebridge/internal/oidctest"
)

// protectedUpstream is an MCP server behind OAuth (a go-sdk Streamable
// HTTP server that takes access tokens of op for its URL) whose tool
// whoami answers with the subject of the token it was called with.
func protectedUpstream(t *testing.T, op *oidctest.Provider, l net.Listener, url string) {
	t.Helper()
	srv := sdk.NewServer(&sdk.Implementation{Name: "protected", Version: "1"}, nil)
	sdk.AddTool(srv, &sdk.Tool{Name: "whoami", Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}}, func(_ context.Context, req *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
		who := "no one"
		if ti := req.Extra.TokenInfo; ti != nil {
			who = ti.UserID
		}
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: who}}}, nil, nil
	})
	v := identity.NewVerifier(identity.Config{Issuer: op.Issuer, Audience: url})
	verify := func(ctx context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		u, err := v.Verify(ctx, token)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", auth.ErrInvalidToken, err)
		}
		return &auth.TokenInfo{UserID: u.Subject, Expiration: time.Now().Add(time.Minute)}, nil
	}
	meta := strings.Replace(url, "/mcp", "/.well-known/oauth-protected-resource/mcp", 1)
	mux := http.NewServeMux()
	mux.Handle("/.well-known/oauth-protected-resource/mcp", auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{Resource: url, AuthorizationServers: []string{op.Issuer}}))
	mux.Handle("/mcp", auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{ResourceMetadataURL: meta})(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)))
	hs := &http.Server{Handler: mux}
	go hs.Serve(l)
	t.Cleanup(func() { hs.Close() })
}

// loginFor runs `tracebridge servers login NAME --user SUB` with this
// process as the user's browser: it signs in at op as username and
// delivers the redirect to the command's loopback callback.
func loginFor(t *testing.T, data string, env []string, op *oidctest.Provider, server, sub, username, password string) {
	t.Helper()
	cmd := exec.Command(tbBin, "--data", data, "servers", "login", server, "--user", sub, "--no-browser")
	cmd.Env = append(os.Environ(), env...)
	stderr, _ := cmd.StderrPipe()
	var out strings.Builder
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stderr)
	var said []string
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		said = append(said, line)
		if strings.HasPrefix(line, op.Issuer) {
			loc, err := op.Login(context.Background(), line, username, password)
			if err != nil {
				t.Fatalf("signing in at the upstream's issuer as %s: %v", username, err)
			}
			if resp, err := http.Get(loc.String()); err == nil { // the browser follows the redirect to the command's callback
				resp.Body.Close()
			}
		}
	}
	if err := cmd.Wait(); err != nil || !strings.Contains(out.String(), "authorized") {
		t.Fatalf("servers login %s --user %s: %v\n%s\n%s", server, sub, err, out.String(), strings.Join(said, "\n"))
	}
}

// [servers.NAME.oauth] per_user (issue 48 item 6): each user the front
// door authenticated calls an OAuth upstream with their own grant: Alice,
// authorized as herself at the upstream's issuer, is who the upstream
// sees; Bob, who never authorized, is refused UpstreamUnauthorized with
// the command that fixes it — never served with Alice's grant.
func TestUpstreamSeesEachUserWithTheirOwnGrant(t *testing.T) {
	long(t)
	port := freePort(t)
	resource := fmt.Sprintf("http://127.0.0.1:%d/mcp", port)
	team := oidctest.Start(t, teamUsers, oidctest.Client{ID: "team-mcp", Audience: []string{resource}})
	ul, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	upURL := "http://" + ul.Addr().String() + "/mcp"
	upIssuer := oidctest.Start(t, []oidctest.User{{ID: "up-alice", Username: "alice-at-up", Password: "up-pw"}},
		oidctest.Client{ID: "up-client", Audience: []string{upURL}})
	protectedUpstream(t, upIssuer, ul, upURL)
	cfg := writeConfig(t, fmt.Sprintf(`[auth]
issuer = %q
scopes = ["mcp"]

[servers.up]
url = %q

[servers.up.oauth]
client_id = "up-client"
scopes = ["openid"]
per_user = true
`, team.Issuer, upURL))
	data := filepath.Join(t.TempDir(), "data")
	loginFor(t, data, []string{cfg}, upIssuer, "up", "u-alice", "alice-at-up", "up-pw")
	url, _, stderr, _ := startHTTPBridgeAt(t, data, port, nil, cfg)

	alice := &mcpChild{session: oauthClient(t, team, url, "team-mcp", "alice", "alice-pw"), stderr: stderr, data: data}
	res, _, code := alice.call(t, "up__whoami", map[string]any{})
	if code != "" || textOf(res) != "up-alice" {
		t.Fatalf("alice's call: %s %q, want the upstream to see up-alice", code, textOf(res))
	}
	bob := &mcpChild{session: oauthClient(t, team, url, "team-mcp", "bob", "bob-pw"), stderr: stderr, data: data}
	res, _, code = bob.call(t, "up__whoami", map[string]any{})
	if code != events.CodeUpstreamUnauthorized || !strings.Contains(textOf(res), "--user u-bob") {
		t.Fatalf("bob's call without his own grant: %s %q", code, textOf(res))
	}
}
