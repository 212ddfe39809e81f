package host_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/host"
	"github.com/tracebridge/tracebridge/pipe"
	"github.com/tracebridge/tracebridge/store"
)

// The workspace host over its pipe, and the operator's typed client: a
// proposal is made (as the bridge's propose_text_edit does), listed,
// approved against its content hash, and applied to the file.
func Example() {
	base, _ := os.MkdirTemp("", "tbx")
	defer os.RemoveAll(base)
	root := filepath.Join(base, "ws")
	os.MkdirAll(root, 0o755)
	os.WriteFile(filepath.Join(root, "price.go"), []byte("package svc\n\nfunc Price() int { return 100 }\n"), 0o644)

	st, _ := store.Open(filepath.Join(base, "events.db"), store.Options{})
	defer st.Close()
	em := events.NewEmitter(st, events.EmitterOptions{})
	defer em.Close(context.Background())
	ws, _ := host.OpenWorkspace(root)
	defer ws.Close()
	props, _ := host.OpenProposals(ws, em, filepath.Join(base, "proposals"), time.Now)
	h := &host.Host{WS: ws, Proposals: props, Rec: em}
	defer h.Close()

	os.Mkdir(filepath.Join(base, "run"), 0o700)
	sock := filepath.Join(base, "run", "host.sock")
	l, err := pipe.Listen(sock)
	if err != nil {
		panic(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	go pipe.NewServer(pipe.ServerOptions{Handlers: h.Handlers(), Recorder: em}).Serve(ctx, l)

	pc := pipe.NewClient(pipe.ClientOptions{Path: sock, Recorder: em})
	defer pc.Close()
	propose, _ := json.Marshal(host.ProposeArgs{Files: []host.FileChange{{Path: "price.go", Edits: []host.Edit{{Original: "return 100", Replacement: "return 120"}}}}})
	if _, err := pc.Call(ctx, pipe.Request{Command: pipe.CmdProposeEdits, RequestID: em.NewID().String(), OperationID: em.NewID().String(), Payload: propose}); err != nil {
		panic(err)
	}

	c := host.Client{Host: pc, NewID: em.NewID}
	list, _ := c.Proposals(ctx)
	p := list[0]
	fmt.Println(p.State, p.Files[0].Path)
	done, err := c.Decide(ctx, host.DecideArgs{ID: p.ID, Approve: true, ContentHash: p.ContentHash, By: "operator"})
	if err != nil {
		panic(err)
	}
	b, _ := os.ReadFile(filepath.Join(root, "price.go"))
	fmt.Println(done.State)
	fmt.Print(string(b[len(b)-32:]))
	// Output:
	// pending price.go
	// applied
	// func Price() int { return 120 }
}
