package host

import (
	"os"
	"os/exec"
	"path"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/host/lsp"
)

// Language is one language server the host may drive: which files it
// serves, how to start it, and the files whose presence in the root says
// the workspace is in that language (for a symbol search naming none).
type Language struct {
	Name       string
	Command    []string
	Extensions []string // ".go"
	Markers    []string // "go.mod"
	LanguageID string   // the LSP languageId of its files ("go", "typescript")
	Timeout    time.Duration
	// TSServer is the tsserver.js typescript-language-server runs; "": the
	// TypeScript installed beside the server (never the workspace's).
	TSServer string
}

// DefaultLanguages are the servers the host uses when their binaries are
// on PATH and tracebridge.toml names no others.
var DefaultLanguages = []Language{
	{Name: "go", Command: []string{"gopls"}, Extensions: []string{".go"}, Markers: []string{"go.mod", "go.work"}, LanguageID: "go"},
	{Name: "typescript", Command: []string{"typescript-language-server", "--stdio"}, Extensions: []string{".ts", ".tsx", ".js", ".jsx", ".mjs", ".cjs"}, Markers: []string{"tsconfig.json", "jsconfig.json", "package.json"}, LanguageID: "typescript"},
	{Name: "python", Command: []string{"pyright-langserver", "--stdio"}, Extensions: []string{".py"}, Markers: []string{"pyproject.toml", "setup.py", "requirements.txt"}, LanguageID: "python"},
	{Name: "c", Command: []string{"clangd"}, Extensions: []string{".c", ".h", ".cc", ".cpp", ".hpp", ".cxx"}, Markers: []string{"compile_commands.json", "CMakeLists.txt"}, LanguageID: "c"},
}

// Languages are the language servers of one workspace, each started on its
// first request and stopped by Close.
type Languages struct {
	ws    *Workspace
	rec   events.Recorder
	langs []Language

	mu        sync.Mutex
	servers   map[string]*lsp.Server
	installed map[string]bool     // command → found on PATH, looked up once
	views     map[string]diskView // by language: what its server was told of the disk (watched.go)
}

// newLanguages returns the servers for ws; langs nil: DefaultLanguages.
func newLanguages(ws *Workspace, rec events.Recorder, langs []Language) *Languages {
	if langs == nil {
		langs = DefaultLanguages
	}
	return &Languages{ws: ws, rec: rec, langs: langs, servers: map[string]*lsp.Server{}, installed: map[string]bool{}, views: map[string]diskView{}}
}

// languageIDs maps extensions to LSP language ids where they differ from
// the server's name.
var languageIDs = map[string]string{".tsx": "typescriptreact", ".js": "javascript", ".jsx": "javascriptreact", ".mjs": "javascript", ".cjs": "javascript", ".h": "c", ".cc": "cpp", ".cpp": "cpp", ".hpp": "cpp", ".cxx": "cpp"}

// forPath returns the server of a workspace file's language, and the file's
// LSP language id; a file no language serves is LanguageServerUnavailable at
// once.
func (l *Languages) forPath(rel string) (*lsp.Server, string, error) {
	ext := path.Ext(rel)
	for _, lang := range l.langs {
		if slices.Contains(lang.Extensions, ext) {
			id := languageIDs[ext]
			if id == "" {
				id = lang.LanguageID
			}
			return l.server(lang), id, nil
		}
	}
	return nil, "", &events.Err{Code: events.CodeLanguageServerUnavailable, Msg: "no language server is configured for " + ext + " files: add one under [lsp.<language>] in tracebridge.toml (command, extensions)"}
}

// byName returns the named language's server.
func (l *Languages) byName(name string) (*lsp.Server, error) {
	for _, lang := range l.langs {
		if lang.Name == name {
			return l.server(lang), nil
		}
	}
	var names []string
	for _, lang := range l.langs {
		names = append(names, lang.Name)
	}
	return nil, &events.Err{Code: events.CodeLanguageServerUnavailable, Msg: "no language " + name + " is configured (configured: " + strings.Join(names, ", ") + ")"}
}

// present returns the servers of the languages the root is written in (a
// marker file at the root), installed ones first.
func (l *Languages) present() []*lsp.Server {
	var found []Language
	for _, lang := range l.langs {
		for _, m := range lang.Markers {
			if !l.ws.Absent(m) {
				found = append(found, lang)
				break
			}
		}
	}
	sort.SliceStable(found, func(i, j int) bool { return l.isInstalled(found[i]) && !l.isInstalled(found[j]) })
	out := make([]*lsp.Server, len(found))
	for i, lang := range found {
		out[i] = l.server(lang)
	}
	return out
}

// isInstalled says whether lang's command is on PATH (asked once: PATH does
// not change under a running host).
func (l *Languages) isInstalled(lang Language) bool {
	if len(lang.Command) == 0 {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	ok, seen := l.installed[lang.Command[0]]
	if !seen {
		_, err := exec.LookPath(lang.Command[0])
		ok = err == nil
		l.installed[lang.Command[0]] = ok
	}
	return ok
}

// unknown says why no language server answers for the whole workspace.
func (l *Languages) unknown() string {
	if len(l.langs) == 0 {
		return "no language servers are configured"
	}
	return "the workspace's language is not known (no go.mod, package.json, pyproject.toml… at its root)"
}

func (l *Languages) server(lang Language) *lsp.Server {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.servers[lang.Name]
	if s == nil {
		ld, refused := lockDown(lang, l.ws.Dir(), os.Environ())
		s = lsp.NewServer(lsp.Config{Language: lang.Name, Command: lang.Command, Root: l.ws.Dir(), Timeout: lang.Timeout,
			Env: ld.Env, InitOptions: ld.InitOptions, Refused: refused}, l.rec)
		l.servers[lang.Name] = s
	}
	return s
}

// Close stops every server started.
func (l *Languages) Close() {
	l.mu.Lock()
	servers := make([]*lsp.Server, 0, len(l.servers))
	for _, s := range l.servers {
		servers = append(servers, s)
	}
	l.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range servers {
		wg.Go(s.Close)
	}
	wg.Wait()
}
