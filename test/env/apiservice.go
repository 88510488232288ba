package env

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubevirt/virt-advisor/test/env/fakemco"
	"github.com/kubevirt/virt-advisor/test/names"
)

const (
	// APIServiceName is the aggregated API registered by the environment.
	APIServiceName = "v1alpha1.advisor.kubevirt.io"
	// Namespace of artifacts/deploy, where the environment installs the
	// server unless Options.Namespace says otherwise; ServiceName of the
	// Service behind the APIService. The advisor's serving certificate is
	// issued for <ServiceName>.<namespace>.svc.
	Namespace   = "virt-advisor"
	ServiceName = "virt-advisor"
	// AdvisorServiceAccount is the ServiceAccount of artifacts/deploy the
	// server runs as, in its namespace.
	AdvisorServiceAccount = "virt-advisor-apiserver"
	// advisorTokenLifetime outlasts any test run or `make run` session.
	advisorTokenLifetime = 48 * time.Hour

	group   = "advisor.kubevirt.io"
	version = "v1alpha1"

	apiServiceAvailableTimeout = 60 * time.Second
)

var apiServiceGVR = names.APIServices

// Kinds of artifacts/deploy the environment does not apply: workloads need
// images (the advisor runs as a local process instead), and the Service and
// APIService are replaced by the local registration below.
var skippedDeployKinds = map[string]bool{
	"StatefulSet": true, "Deployment": true, "DaemonSet": true, "Pod": true, "Job": true,
	"PodDisruptionBudget": true, "HorizontalPodAutoscaler": true,
	"Service": true, "APIService": true,
}

// registration builds the ExternalName Service pointing at localhost:port
// and the APIService with the serving CA as caBundle (real TLS
// verification, never insecureSkipTLSVerify). Priorities are taken from the
// deployed APIService in artifacts/deploy when there is one.
func registration(deploy []*unstructured.Unstructured, namespace string, port int, servingCAPEM []byte) (svc, apiService *unstructured.Unstructured) {
	groupPriority, versionPriority := int64(1000), int64(15)
	for _, obj := range deploy {
		if obj.GetKind() == "APIService" && obj.GetName() == APIServiceName {
			if v, ok, _ := unstructured.NestedInt64(obj.Object, "spec", "groupPriorityMinimum"); ok {
				groupPriority = v
			}
			if v, ok, _ := unstructured.NestedInt64(obj.Object, "spec", "versionPriority"); ok {
				versionPriority = v
			}
		}
	}
	labels := map[string]any{"app.kubernetes.io/name": "virt-advisor", "app.kubernetes.io/component": "apiserver"}
	svc = &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1",
		"kind":       "Service",
		"metadata":   map[string]any{"name": ServiceName, "namespace": namespace, "labels": labels},
		"spec": map[string]any{
			// With --enable-aggregator-routing=false the aggregator dials
			// <externalName>:<port>, i.e. the local process.
			"type":         "ExternalName",
			"externalName": "localhost",
			"ports": []any{map[string]any{
				"name": "https", "protocol": "TCP", "port": int64(port), "targetPort": int64(port),
			}},
		},
	}}
	apiService = &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1",
		"kind":       "APIService",
		"metadata":   map[string]any{"name": APIServiceName, "labels": labels},
		"spec": map[string]any{
			"group":                group,
			"version":              version,
			"groupPriorityMinimum": groupPriority,
			"versionPriority":      versionPriority,
			"service":              map[string]any{"name": ServiceName, "namespace": namespace, "port": int64(port)},
			"caBundle":             base64.StdEncoding.EncodeToString(servingCAPEM),
		},
	}}
	return svc, apiService
}

// waitAPIServiceAvailable polls the APIService until Available=True. On
// timeout the error carries its conditions and the end of the advisor log,
// which together usually say what is wrong (TLS, RBAC, not serving).
func waitAPIServiceAvailable(ctx context.Context, a *applier, adv *Advisor) error {
	var last *unstructured.Unstructured
	err := poll(ctx, "APIService "+APIServiceName+" Available", 250*time.Millisecond, apiServiceAvailableTimeout, adv.proc, func(ctx context.Context) (bool, error) {
		obj, err := a.dyn.Resource(apiServiceGVR).Get(ctx, APIServiceName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		last = obj
		if fakemco.ConditionStatus(obj, "Available") != "True" {
			return false, errors.New("not Available yet") // conditions are added below
		}
		// The condition may be stale (a reused etcd, a restarted advisor):
		// also prove the aggregator reaches the current process.
		if _, err := a.disc.ServerResourcesForGroupVersion(group + "/" + version); err != nil {
			return false, fmt.Errorf("Available=True but discovery through kube-apiserver fails: %w", err)
		}
		return true, nil
	})
	if err == nil {
		return nil
	}
	if last != nil {
		err = fmt.Errorf("%w\nAPIService conditions: %s", err, conditionsSummary(last))
	}
	return fmt.Errorf("%w\nlast lines of %s:\n%s", err, adv.LogPath, adv.proc.tail(logTailLines))
}

// touchAPIService annotates the APIService so the aggregator re-checks it
// at once: after failed checks (an advisor restarting, a stale condition
// in a reused etcd) it would otherwise wait for its rate-limited retry or
// 30 s resync. A separate field manager keeps the
// spec owned by fieldManager untouched.
func (a *applier) touchAPIService(ctx context.Context) error {
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1",
		"kind":       "APIService",
		"metadata": map[string]any{
			"name":        APIServiceName,
			"annotations": map[string]any{"virt-advisor-testenv/touched-at": time.Now().UTC().Format(time.RFC3339Nano)},
		},
	}}
	opts := metav1.ApplyOptions{FieldManager: fieldManager + "-restart", Force: true}
	if _, err := a.dyn.Resource(apiServiceGVR).Apply(ctx, APIServiceName, obj, opts); err != nil {
		return fmt.Errorf("annotating APIService %s: %w", APIServiceName, err)
	}
	return nil
}
