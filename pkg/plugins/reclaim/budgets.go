package reclaim

import (
	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	policy "github.com/caldera-sched/caldera/pkg/reclaim"
)

// markBudgets gives the decision the PodDisruptionBudgets: what each still
// allows, and which budgets cover each candidate. Each victim spends one
// disruption of every budget covering it and breaks the budget when none is
// left, as upstream's DefaultPreemption counts (filterPodsWithPDBViolation):
// a budget allowing one disruption protects all its pods but one. A pod the
// budget lists as disrupted already spends nothing.
func (pl *Reclaim) markBudgets(in *policy.Input, running []*v1.Pod) {
	pdbs, err := pl.pdbs()
	if err != nil || len(pdbs) == 0 {
		return
	}
	// Selectors are parsed once, not once per pod.
	type budget struct {
		pdb *policyv1.PodDisruptionBudget
		sel labels.Selector
	}
	var budgets []budget
	for _, pdb := range pdbs {
		if sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector); err == nil && !sel.Empty() {
			budgets = append(budgets, budget{pdb, sel})
			in.Budgets = append(in.Budgets, pdb.Status.DisruptionsAllowed)
		}
	}
	if len(budgets) == 0 {
		return
	}
	byID := make(map[string]*v1.Pod, len(running))
	for _, p := range running {
		byID[p.Namespace+"/"+p.Name] = p
	}
	for i := range in.Pods {
		p := byID[in.Pods[i].ID]
		if p == nil || len(p.Labels) == 0 {
			continue
		}
		for b, bu := range budgets {
			if bu.pdb.Namespace != p.Namespace || !bu.sel.Matches(labels.Set(p.Labels)) {
				continue
			}
			if _, done := bu.pdb.Status.DisruptedPods[p.Name]; done {
				continue
			}
			in.Pods[i].Budgets = append(in.Pods[i].Budgets, b)
		}
	}
}

func (pl *Reclaim) pdbs() ([]*policyv1.PodDisruptionBudget, error) {
	return pl.evaluator.PdbLister.List(labels.Everything())
}
