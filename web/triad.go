package web

import (
	"archive/zip"
	"net/http"
	"os"
	"path/filepath"

	"github.com/tracebridge/tracebridge/export"
)

// triad downloads a run's triad (log, metadata.json, .mmd) as a zip, the
// same files `tracebridge replay ID --artifacts ROOT` writes.
func (s *Server) triad(w http.ResponseWriter, r *http.Request) {
	run, err := s.loadRun(r.Context(), r.PathValue("id"))
	if err != nil {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	dir, err := os.MkdirTemp("", "tracebridge-triad-")
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	defer os.RemoveAll(dir)
	t, err := export.WriteTriad(dir, run, export.TriadOptions{Version: s.opts.Version, Source: "ui"})
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	name := filepath.Base(t.Diagram[:len(t.Diagram)-len(".mmd")])
	w.Header().Set("Content-Type", "application/zip")
	w.Header().Set("Content-Disposition", `attachment; filename="`+name+`.zip"`)
	zw := zip.NewWriter(w)
	for _, f := range []struct{ path, name string }{{t.Log, "artifacts/logs/" + filepath.Base(t.Log)},
		{t.Metadata, "artifacts/logs/" + filepath.Base(t.Metadata)}, {t.Diagram, "docs/diagrams/" + filepath.Base(t.Diagram)}} {
		b, err := os.ReadFile(f.path)
		if err != nil {
			s.opts.Logger.Error("ui: triad", "err", err)
			return
		}
		fw, err := zw.Create(f.name)
		if err != nil {
			return
		}
		fw.Write(b)
	}
	zw.Close()
}
