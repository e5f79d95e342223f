// Package quality is the scheduling-quality benchmark (issue 21,
// docs/quality.md): one seeded trace of tenants' jobs and gangs
// (test/quality/trace) played under the default scheduler, Caldera and
// upstream's GangScheduling, each on a fresh control plane from
// test/integration/harness, and scored by test/quality/score.
//
// The runner stands in for kubelets and the Job controller (run.go): a
// job's pods succeed together once all of them have run for the job's
// (compressed) run time, and evicted pods are created again. TestQuality
// runs only with -quality.out (make bench-quality); it reports numbers and
// never fails on a target.
package quality
