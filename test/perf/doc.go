// Package perf measures Caldera's scheduling speed side by side with the
// default kube-scheduler profile and upstream's in-tree GangScheduling plugin,
// on the same workloads, in one run (issue 6; docs/performance.md).
//
// Each (workload, profile) pair runs on a fresh control plane from
// test/integration/harness: an embedded etcd, a real kube-apiserver, and
// the real scheduler, in-process or (W5, W6, whose figures include its
// heap) as a process of its own, or, in external mode, any scheduler
// binary started from a command line. Nodes are API objects only (no
// kubelets): a pod counts as scheduled when it is bound. Throughput is
// sampled from a watch on the workload's pods; attempt latencies come from
// the scheduler's own /metrics.
//
// The workloads only run when asked for (`make bench`, `make bench-full`, or
// `go test ./test/perf -run TestPerf -args -perf.size=quick`): a plain
// `go test ./...` skips them. They report numbers and never fail on a
// target: a benchmark is not a timed unit test.
package perf
