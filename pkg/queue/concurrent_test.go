package queue

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

// The cache reads one Tree and one Shares from several goroutines at once
// under its read lock (the status writer, the dump, the metrics) and builds
// Shares from a Tree that QueueSort's readers may hold: Tree and Shares must
// be safe for concurrent reads, Divide must not write to its Tree. Run with
// -race; every reader must also get the answers a lone reader gets.
func TestConcurrentReads(t *testing.T) {
	const readers, rounds = 8, 100
	inputs := [][]byte{
		{3, 32, 4, 0, 0, 0x09, 0x0f, 40, 0x30, 1, 4, 0, 20, 0x33, 2, 6, 0x0b, 10, 20, 0x3f},
		{5, 10, 3, 2, 9, 0x19, 0x0f, 8, 0xff, 3, 3, 0x48, 0x30, 0x70, 0, 4, 0xff, 1, 0, 0x80, 9, 0x33, 1, 5, 0, 0x33, 7, 3, 0x8a, 1, 2, 200, 0xff},
		{7, 200, 9, 1, 3, 0x3b, 0x0f, 2, 4, 0x33, 2, 5, 0x09, 0xff, 1, 1, 6, 0x40, 0x3c, 3, 7, 0x0b, 100, 20, 0x3f, 2, 8, 0x01, 3, 0x0c, 5, 9, 0xc9, 2, 1, 40, 0xff},
	}
	for i, data := range inputs {
		t.Run(fmt.Sprint("tree", i), func(t *testing.T) {
			specs, total, usage := decodeQueues(&bytesIn{data})
			tr := BuildTree(specs)
			shared := Divide(tr, total, usage)
			want := readAll(tr, shared)
			// Divide on the shared tree, and the reads of a shared Shares.
			if got := readAll(tr, Divide(tr, total, usage)); got != want {
				t.Fatalf("a second Divide differs:\n got %s\nwant %s", got, want)
			}
			var wg sync.WaitGroup
			errs := make(chan string, readers)
			for r := range readers {
				wg.Go(func() {
					for n := range rounds {
						s := shared
						if (n+r)%2 == 0 {
							s = Divide(tr, total, usage)
						}
						if got := readAll(tr, s); got != want {
							errs <- fmt.Sprintf("reader %d round %d:\n got %s\nwant %s", r, n, got, want)
							return
						}
					}
				})
			}
			wg.Wait()
			close(errs)
			for e := range errs {
				t.Error(e)
			}
		})
	}
}

// readAll renders every answer Tree and Shares give about every queue.
func readAll(tr *Tree, s *Shares) string {
	var b strings.Builder
	fmt.Fprintf(&b, "total=%v problems=%d;", s.Total(), len(tr.Problems()))
	for _, name := range tr.Names() {
		q, _ := s.Get(name)
		spec, _ := tr.Spec(name)
		fmt.Fprintf(&b, " %s[%v healthy=%v problem=%v children=%v ancestors=%v deserved=%v share=%v %+v]",
			name, spec.Parent, tr.Healthy(name), tr.Problem(name), tr.Children(name), tr.Ancestors(name),
			s.Deserved(name), s.Share(name), q)
	}
	return b.String()
}
