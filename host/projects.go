package host

import (
	"io/fs"
	"path"
	"sort"
	"strings"
)

// Project is a directory holding a project manifest.
type Project struct {
	Dir      string `json:"dir"`      // relative to the root, "." for the root
	Kind     string `json:"kind"`     // go, node, rust, python, dotnet, maven, gradle, …
	Manifest string `json:"manifest"` // the file that says so
	// Root is the workspace root the project is in, when a bridge lists
	// the projects of several hosts at once.
	Root string `json:"root,omitempty"`
}

// ProjectList is what list_projects returns.
type ProjectList struct {
	Projects []Project `json:"projects"`
	// Limited is true when the walk stopped at MaxWalkEntries.
	Limited bool `json:"limited"`
}

// MaxWalkEntries bounds one project scan.
const MaxWalkEntries = 50_000

var manifests = map[string]string{
	"go.mod": "go", "package.json": "node", "Cargo.toml": "rust", "pyproject.toml": "python", "setup.py": "python",
	"pom.xml": "maven", "build.gradle": "gradle", "build.gradle.kts": "gradle", "CMakeLists.txt": "cmake",
	"Gemfile": "ruby", "composer.json": "php", "mix.exs": "elixir", "deno.json": "deno", "Package.swift": "swift",
}

var manifestSuffixes = map[string]string{".csproj": "dotnet", ".fsproj": "dotnet", ".sln": "dotnet"}

// skipped are directories that hold other people's code or build output.
var skipped = map[string]bool{
	"node_modules": true, "vendor": true, "third_party": true, "target": true, "dist": true, "build": true,
	"bin": true, "obj": true, "out": true, "__pycache__": true, "venv": true,
}

// ListProjects finds project manifests under the root, skipping hidden and
// vendored trees, walking through os.Root so nothing outside is read.
func (w *Workspace) ListProjects() (ProjectList, error) {
	list := ProjectList{Projects: []Project{}}
	n := 0
	err := fs.WalkDir(w.root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // an unreadable corner does not end the scan
		}
		if n++; n > MaxWalkEntries {
			list.Limited = true
			return fs.SkipAll
		}
		name := d.Name()
		if d.IsDir() {
			if p != "." && (strings.HasPrefix(name, ".") || skipped[name]) {
				return fs.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		kind, ok := manifests[name]
		if !ok {
			kind, ok = manifestSuffixes[path.Ext(name)]
		}
		if ok {
			list.Projects = append(list.Projects, Project{Dir: path.Dir(p), Kind: kind, Manifest: p})
		}
		return nil
	})
	sort.SliceStable(list.Projects, func(i, j int) bool { return list.Projects[i].Manifest < list.Projects[j].Manifest })
	return list, err
}
