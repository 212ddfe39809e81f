package config

import (
	"strings"
	"testing"
)

// [auth] and who decides: each mistake is refused with what to write; the
// harmless twin of each passes.
func TestAuthSettingsAreChecked(t *testing.T) {
	const ok = "[auth]\nissuer = \"https://idp.example\"\nui_client_id = \"ui\"\n[auth.roles]\napprover = [\"a\"]\n"
	for body, want := range map[string]string{
		"[auth]\nscopes = [\"mcp\"]\n":                                            "set the issuer",
		"[auth]\nissuer = \"http://idp.example\"\n":                               "in the clear",
		"[auth]\nissuer = \"idp.example\"\n":                                      "not an http(s) URL",
		"[auth]\nissuer = \"https://u:p@idp.example\"\n":                          "no credentials",
		"[auth]\nissuer = \"https://i\"\nscopes = [\"a b\"]\n":                    "is not a scope",
		"[auth]\nissuer = \"https://i\"\nui_client_id = \"ui\"\n":                 "at least one role",
		"[auth]\nissuer = \"https://i\"\nui_origin = \"http://127.0.0.1:7077\"\n": "NAME.localhost",
		"[approval]\nfour_eyes = \"some\"\n":                                      "off, destructive, all",
		"[approval]\ndeciders = [\"approvers\"]\n":                                "ui_client_id",
		"[approval]\nfour_eyes = \"all\"\n":                                       "ui_client_id",
	} {
		_, err := Parse("t.toml", []byte(body))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", body, err, want)
		}
	}
	for _, body := range []string{ok, ok + "[approval]\nfour_eyes = \"destructive\"\ndeciders = [\"a\"]\n",
		"[auth]\nissuer = \"http://127.0.0.1:9000\"\nresource = \"https://mcp.example/mcp\"\nscopes = [\"mcp\"]\n",
		strings.Replace(ok, "[auth.roles]", "ui_origin = \"http://tb-team.localhost:7077\"\n[auth.roles]", 1)} {
		if _, err := Parse("t.toml", []byte(body)); err != nil {
			t.Errorf("%q: %v", body, err)
		}
	}
}
