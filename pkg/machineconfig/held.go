package machineconfig

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubevirt/virt-advisor/pkg/apis/advisor/v1alpha1"
)

// Held is the record of a change an aborted plan holds its pools paused
// for (status.abort.held): what the pools that render it are found by,
// kept with the abort so that neither a new draft of the items nor a
// restart loses it.
func Held(c Change) v1alpha1.HeldConfig {
	h := v1alpha1.HeldConfig{Kind: MachineConfigGVK.Kind, Name: c.Name, Labels: c.Labels}
	if !c.KubeletConfig {
		return h
	}
	h.Kind, h.Labels = KubeletConfigGVK.Kind, nil
	if len(c.PoolSelector) > 0 {
		var sel metav1.LabelSelector
		// A selector that does not convert selects no pool for the
		// MachineConfig operator either (it renders the KubeletConfig
		// for none): nothing of it rolls out to hold.
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(c.PoolSelector, &sel); err == nil {
			h.MachineConfigPoolSelector = &sel
		}
	}
	return h
}

// HeldChange is the change a held config of an aborted plan stands for.
func HeldChange(h v1alpha1.HeldConfig) Change {
	c := Change{Name: h.Name, Labels: h.Labels}
	if h.Kind != KubeletConfigGVK.Kind {
		return c
	}
	c.KubeletConfig, c.Labels = true, nil
	if h.MachineConfigPoolSelector != nil {
		c.PoolSelector, _ = runtime.DefaultUnstructuredConverter.ToUnstructured(h.MachineConfigPoolSelector)
	}
	return c
}
