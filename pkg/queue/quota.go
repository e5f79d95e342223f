package queue

import (
	"fmt"
	"sort"

	"github.com/caldera-sched/caldera/pkg/resources"
)

// Quota is one namespace ResourceQuota as the quota check (CheckQuota) reads
// it: its limits and current usage, keyed by the request resource they limit
// ("cpu" in millicores for requests.cpu, "memory", "nvidia.com/gpu", ...).
type Quota struct {
	Name       string
	Hard, Used resources.List
}

// FitsQuotas is the quota check (CheckQuota) for one group of namespace ns. A
// quota's Used already counts the group's own unfinished pods (quota
// admission charged them when they were created), so own is taken out before
// the group's minimum request is added; earlier admits what the same pass
// admitted before in the namespace. Only resources that a quota limits and
// the group requests are compared. The message names the quota and the
// resource.
func FitsQuotas(ns string, quotas []Quota, request, own, earlier resources.List) (bool, string) {
	for _, q := range quotas {
		names := make([]string, 0, len(q.Hard))
		for n := range q.Hard {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			req := request[n]
			if req <= 0 {
				continue
			}
			if q.Used[n]-own[n]+earlier[n]+req > q.Hard[n] {
				return false, fmt.Sprintf("namespace %s: ResourceQuota %s: %s needs %s, quota allows %s (used %s)",
					ns, q.Name, n, resources.Format(n, req), resources.Format(n, q.Hard[n]), resources.Format(n, q.Used[n]))
			}
		}
	}
	return true, ""
}
