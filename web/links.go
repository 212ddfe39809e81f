package web

import (
	"net"
	"net/url"
	"strings"

	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// inertLocalLinks makes links in a review to other services on this
// machine (loopback addresses, localhost and *.localhost names, any port)
// plain text with a visible marker. A review is written by an AI client;
// a link that sends the operator's browser to another local listener is
// how a hostile one would try to reach the UI's credentials.
type inertLocalLinks struct{}

func (inertLocalLinks) Transform(doc *ast.Document, reader text.Reader, _ parser.Context) {
	var local []ast.Node
	ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch l := n.(type) {
		case *ast.Link:
			if isLocalURL(string(l.Destination)) {
				local = append(local, n)
			}
		case *ast.AutoLink:
			if isLocalURL(string(l.URL(reader.Source()))) {
				local = append(local, n)
			}
		case *ast.Image:
			if isLocalURL(string(l.Destination)) {
				local = append(local, n)
			}
		}
		return ast.WalkContinue, nil
	})
	for _, n := range local {
		parent := n.Parent()
		var dest string
		switch l := n.(type) {
		case *ast.Link:
			dest = string(l.Destination)
			for c := l.FirstChild(); c != nil; {
				next := c.NextSibling()
				parent.InsertBefore(parent, n, c)
				c = next
			}
		case *ast.AutoLink:
			dest = string(l.URL(reader.Source()))
		case *ast.Image:
			dest = string(l.Destination)
		}
		parent.ReplaceChild(parent, n, ast.NewString([]byte(" [link to a local service removed: "+dest+"]")))
	}
}

// isLocalURL reports whether raw points at a service on this machine.
func isLocalURL(raw string) bool {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return true // unparseable: not worth the risk
	}
	if u.Host == "" {
		return false // relative: the UI's own pages
	}
	h := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if h == "localhost" || strings.HasSuffix(h, ".localhost") || h == "0.0.0.0" || h == "" {
		return true
	}
	if ip := net.ParseIP(h); ip != nil {
		return ip.IsLoopback() || ip.IsUnspecified()
	}
	// Numeric spellings browsers accept (2130706433, 0x7f000001, 0177.1).
	// Anything numeric-looking counts: an inert link costs a click.
	return h[0] >= '0' && h[0] <= '9' && strings.Trim(h, "0123456789abcdefx.") == ""
}

var localLinkPolicy = parser.WithASTTransformers(util.Prioritized(inertLocalLinks{}, 100))
