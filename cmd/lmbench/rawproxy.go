package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"sync"
)

// rawProxy serves the hop benchmark's floor: a bare net/http server that
// puts a stdio server behind streamable HTTP as simply as it can be done.
// Each message a client POSTs goes to its own child as one line with an id
// of the proxy's own, and the child's answer goes back with the client's
// id; notifications are accepted (202), and nothing else is served. No
// sessions, no checks, no log: what HTTP on loopback and a pipe to the
// child cost before any proxy's own work.
func rawProxy(addrFile string, child ...string) error {
	cmd := exec.Command(child[0], child[1:]...)
	cmd.Stderr = os.Stderr
	in, out, err := startPiped(cmd, 1<<20)
	if err != nil {
		return err
	}
	var mu sync.Mutex
	waiting := map[string]chan []byte{}
	go func() {
		for {
			line, err := out.ReadBytes('\n')
			if err != nil {
				os.Exit(1) // the child is gone
			}
			var answer struct {
				ID json.RawMessage `json:"id"`
			}
			if json.Unmarshal(line, &answer) != nil {
				continue
			}
			mu.Lock()
			ch := waiting[string(answer.ID)]
			delete(waiting, string(answer.ID))
			mu.Unlock()
			if ch != nil {
				ch <- line
			}
		}
	}()
	var seq int64
	var writeMu sync.Mutex
	forward := func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		body, err := io.ReadAll(r.Body)
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if err != nil || json.Unmarshal(body, &msg) != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		line := []byte(`{"jsonrpc":"2.0","method":` + strconv.Quote(msg.Method))
		if len(msg.Params) > 0 {
			var params bytes.Buffer
			json.Compact(&params, msg.Params)
			line = append(append(line, `,"params":`...), params.Bytes()...)
		}
		if msg.ID == nil {
			writeMu.Lock()
			in.Write(append(line, "}\n"...))
			writeMu.Unlock()
			w.WriteHeader(http.StatusAccepted)
			return
		}
		mu.Lock()
		seq++
		id := strconv.FormatInt(seq, 10)
		answer := make(chan []byte, 1)
		waiting[id] = answer
		mu.Unlock()
		writeMu.Lock()
		in.Write(append(append(append(line, `,"id":`...), id...), "}\n"...))
		writeMu.Unlock()
		var res struct {
			Result json.RawMessage `json:"result,omitempty"`
			Error  json.RawMessage `json:"error,omitempty"`
		}
		json.Unmarshal(<-answer, &res)
		reply, _ := json.Marshal(struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Result  json.RawMessage `json:"result,omitempty"`
			Error   json.RawMessage `json:"error,omitempty"`
		}{"2.0", msg.ID, res.Result, res.Error})
		w.Header().Set("Content-Type", "application/json")
		w.Write(reply)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	if err := os.WriteFile(addrFile, []byte(ln.Addr().String()), 0o600); err != nil {
		return err
	}
	return fmt.Errorf("serve: %w", http.Serve(ln, http.HandlerFunc(forward)))
}
