package events

import (
	"strings"
	"testing"
)

// G20: what is recorded of an upstream's URL and argv holds no credential.
func TestSafeURLAndArgs(t *testing.T) {
	for in, want := range map[string]string{
		"http://127.0.0.1:27563/api/mcp/s/zqPathSecret42/mcp?api_key=zqQueryKey77": "http://127.0.0.1:27563/api/mcp/s/REDACTED/mcp?api_key=REDACTED",
		"https://user:pw@mcp.example.com/sse":                                      "https://REDACTED@mcp.example.com/sse",
		"https://mcp.example.com/v1/mcp":                                           "https://mcp.example.com/v1/mcp",
	} {
		if got := SafeURL(in); got != want {
			t.Errorf("SafeURL(%q) = %q, want %q", in, got, want)
		}
	}
	args := []string{"up.py", "--api-key", "zqArgKey55", "--token=zqTok99", "--port", "8080", "https://h/x?key=zqK"}
	got := strings.Join(SafeArgs(args), " ")
	if want := "up.py --api-key REDACTED --token=REDACTED --port 8080 https://h/x?key=REDACTED"; got != want {
		t.Errorf("SafeArgs = %q, want %q", got, want)
	}
	if v, f := ArgCredentials(args); strings.Join(v, " ") != "zqArgKey55 zqTok99 zqK" || strings.Join(f, " ") != "--api-key --token a URL" {
		t.Errorf("ArgCredentials = %v %v", v, f)
	}
	if c := URLCredentials("http://u:pw@h/api/s/zqPathSecret42/mcp?api_key=zqQueryKey77"); strings.Join(c, " ") != "u:pw pw zqPathSecret42 zqQueryKey77" {
		t.Errorf("URLCredentials = %v", c)
	}
}
