package web

import (
	"bytes"
	"fmt"
	"html/template"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"

	"github.com/tracebridge/tracebridge/host"
)

// md renders CommonMark with GitHub tables and strikethrough. Raw HTML in
// the source is dropped (goldmark's default: it is never passed through)
// and links with dangerous schemes (javascript:, vbscript:, data: other
// than images) lose their href, so a review cannot carry script.
// Links to other local services lose their href (links.go).
var md = goldmark.New(goldmark.WithExtensions(extension.Table, extension.Strikethrough), goldmark.WithParserOptions(localLinkPolicy))

// renderReview renders a review document. Its references — [file:line][],
// [text](file:line), [text](function:Name) — become links to the workspace
// view at the line the host resolved (refs: with the review's baseUri, the
// file and the line checked), struck through where the host found them
// broken; those it did not look at link as written ([file:line]) or stay
// text (symbols).
func renderReview(src string, refs []host.Ref) template.HTML {
	var defs strings.Builder
	seen := map[string]bool{}
	for _, ref := range refs {
		label := ref.Label()
		to := "~~" + label + "~~"
		if ref.OK && !filepath.IsAbs(ref.Path) {
			to = fmt.Sprintf("[%s](%s)", label, workspaceLink(ref))
		}
		src = strings.ReplaceAll(src, ref.Text, to)
	}
	for _, ref := range host.ParseRefs(src) {
		label := ref.Label()
		switch {
		case ref.Symbol != "": // one the host did not resolve: its text
			src = strings.ReplaceAll(src, ref.Text, label)
		case strings.HasSuffix(ref.Text, ")"): // [text](file:line)
			src = strings.ReplaceAll(src, ref.Text, fmt.Sprintf("[%s](%s)", label, workspaceLink(ref)))
		case !seen[strings.ToLower(label)]:
			seen[strings.ToLower(label)] = true
			fmt.Fprintf(&defs, "\n[%s]: %s\n", label, workspaceLink(ref))
		}
	}
	var out bytes.Buffer
	if err := md.Convert([]byte(src+"\n"+defs.String()), &out); err != nil {
		return template.HTML("<p>the review could not be rendered: " + template.HTMLEscapeString(err.Error()) + "</p>")
	}
	return template.HTML(out.String()) // goldmark escapes text and drops raw HTML
}

var (
	refLinkRE  = regexp.MustCompile(`\[([^\[\]\n]+)\]\[\]`)
	headingRE  = regexp.MustCompile(`^#{1,6}[ \t]+`)
	emphasisRE = regexp.MustCompile("\\*\\*|__|`")
	blankRunRE = regexp.MustCompile(`\n{3,}`)
)

// commitMessage turns a review into a commit message: the first heading
// (or line) as the subject, then the rest as plain text, references as
// file:line.
func commitMessage(src string) string {
	lines := strings.Split(strings.ReplaceAll(src, "\r\n", "\n"), "\n")
	var subject string
	var body []string
	for _, l := range lines {
		l = refLinkRE.ReplaceAllString(l, "$1")
		l = emphasisRE.ReplaceAllString(l, "")
		if subject == "" && strings.TrimSpace(l) != "" {
			subject = strings.TrimSpace(headingRE.ReplaceAllString(l, ""))
			continue
		}
		if headingRE.MatchString(l) {
			l = strings.TrimSpace(headingRE.ReplaceAllString(l, "")) + ":"
		}
		body = append(body, strings.TrimRight(l, " \t"))
	}
	text := strings.Trim(blankRunRE.ReplaceAllString(strings.Join(body, "\n"), "\n\n"), "\n")
	if text == "" {
		return subject + "\n"
	}
	return subject + "\n\n" + text + "\n"
}

// workspaceLink is the workspace view of ref's file at its line.
func workspaceLink(ref host.Ref) string {
	return fmt.Sprintf("/workspace?file=%s#L%d", url.QueryEscape(ref.Path), ref.Line)
}
