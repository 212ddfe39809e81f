package identity

import (
	"fmt"
	"strings"
	"testing"
)

// A user's attributes read back as the user; a user in very many groups
// is named with the first ones, so the attribute stays an attribute.
func TestUserAttrsRoundTrip(t *testing.T) {
	u := User{Subject: "s", Issuer: "https://i", Name: "n", Email: "e@x", Groups: []string{"a", "b"}, ClientID: "c"}
	kv := u.Attrs()
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	if back := FromAttrs(func(k string) string { return m[k] }); fmt.Sprint(back) != fmt.Sprint(u) {
		t.Fatalf("%+v read back as %+v", u, back)
	}
	var many []string
	for i := range 1000 {
		many = append(many, fmt.Sprintf("group-%04d", i))
	}
	g := joinGroups(many)
	if len(g) > maxGroupsAttr+4 || !strings.HasPrefix(g, "group-0000,group-0001") || !strings.HasSuffix(g, ",…") {
		t.Fatalf("%d bytes: …%s", len(g), g[len(g)-30:])
	}
}
