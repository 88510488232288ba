package e2e

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/kubevirt/virt-advisor/test/env"
	"github.com/kubevirt/virt-advisor/test/env/fakemco"
)

var (
	managedClusterGVR = schema.GroupVersionResource{Group: "cluster.open-cluster-management.io", Version: "v1", Resource: "managedclusters"}
	manifestWorkGVR   = schema.GroupVersionResource{Group: "work.open-cluster-management.io", Version: "v1", Resource: "manifestworks"}
)

// The fleet runs on Open Cluster Management: these specs check the parts
// it relies on, as real OCM processes on three real control planes (the
// suite's as the hub, two spokes of their own): spokes join the hub with
// certificates kube-controller-manager signs, and a
// ManifestWorkReplicaSet rolls out to a canary wave first and to the next
// only once condition rules on the spoke's object say the canary is done.
var _ = Describe("a fleet on Open Cluster Management", Ordered, Serial, Label("fleet"), func() {
	var (
		ocm    *env.OCM
		hubDyn dynamic.Interface
	)

	BeforeAll(func(ctx SpecContext) {
		// Both spokes start at once: each is a whole control plane.
		names := []string{"spoke-a", "spoke-b"}
		started := make([]*env.Env, len(names))
		errs := make([]error, len(names))
		var wg sync.WaitGroup
		for i, name := range names {
			dir, err := os.MkdirTemp("", "virt-advisor-e2e-"+name+"-")
			Expect(err).NotTo(HaveOccurred())
			wg.Go(func() {
				started[i], errs[i] = env.Start(ctx, env.Options{Dir: dir, Log: GinkgoWriter, AdvisorArgs: []string{"--cluster-name=" + name, "--rollout-coalesce-window=2s"},
					FakeMCO: fakemco.Options{RenderDelay: 200 * time.Millisecond, StepTime: 300 * time.Millisecond}})
			})
			DeferCleanup(func() {
				if started[i] != nil {
					started[i].Stop()
				}
				if !CurrentSpecReport().Failed() {
					_ = os.RemoveAll(dir)
				}
			})
		}
		wg.Wait()
		spokes := map[string]*env.Env{}
		for i, name := range names {
			Expect(errs[i]).NotTo(HaveOccurred(), "starting %s", name)
			spokes[name] = started[i]
		}
		var err error
		ocm, err = env.StartOCM(ctx, testEnv, spokes)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() {
			if CurrentSpecReport().Failed() {
				ocm.Tail(GinkgoWriter, 30)
			}
			ocm.Stop()
		})
		hubDyn = dynamic.NewForConfigOrDie(testEnv.AdminConfig)
	}, NodeTimeout(8*time.Minute))

	It("joins each spoke with a client certificate kube-controller-manager signed for its agent", func(ctx SpecContext) {
		for _, name := range []string{"spoke-a", "spoke-b"} {
			csrs, err := kube.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{
				LabelSelector: "open-cluster-management.io/cluster-name=" + name})
			Expect(err).NotTo(HaveOccurred())
			Expect(csrs.Items).NotTo(BeEmpty(), "the agent of %s asked the hub for a certificate", name)
			csr := csrs.Items[0]
			Expect(csr.Spec.SignerName).To(Equal("kubernetes.io/kube-apiserver-client"))
			Expect(csr.Spec.Username).To(Equal("system:open-cluster-management:bootstrap"), "asked with the bootstrap identity, which may do nothing else")
			Expect(csr.Status.Certificate).NotTo(BeEmpty(), "signed by kube-controller-manager's csrsigning controller")

			mc, err := hubDyn.Resource(managedClusterGVR).Get(ctx, name, metav1.GetOptions{})
			Expect(err).NotTo(HaveOccurred())
			accepted, _, _ := unstructured.NestedBool(mc.Object, "spec", "hubAcceptsClient")
			Expect(accepted).To(BeTrue())
			for _, c := range []string{"HubAcceptedManagedCluster", "ManagedClusterJoined", "ManagedClusterConditionAvailable"} {
				Expect(fakemco.ConditionStatus(mc, c)).To(Equal("True"), "%s of %s", c, name)
			}
		}
		By("the bootstrap identity may ask to join, and nothing else")
		cfg, _, err := testEnv.UserConfig("system:open-cluster-management:bootstrap")
		Expect(err).NotTo(HaveOccurred())
		_, err = dynamic.NewForConfigOrDie(cfg).Resource(manifestWorkGVR).Namespace("spoke-a").List(ctx, metav1.ListOptions{})
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "listing ManifestWorks as the bootstrap identity: %v", err)
	})

	It("rolls a ManifestWorkReplicaSet out to the canary wave, and to the next once the canary's rules say it is done", func(ctx SpecContext) {
		ns := "fleet-e2e"
		By("spoke-a is the canary: a decision group of its own")
		_, err := hubDyn.Resource(managedClusterGVR).Patch(ctx, "spoke-a", types.MergePatchType,
			[]byte(`{"metadata":{"labels":{"virt-advisor.kubevirt.io/wave":"canary"}}}`), metav1.PatchOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(testEnv.ApplyYAML(ctx, fmt.Sprintf(fleetRolloutYAML, ns))).To(Succeed())

		spokeA := kubernetes.NewForConfigOrDie(ocm.Spokes["spoke-a"].AdminConfig)
		spokeB := kubernetes.NewForConfigOrDie(ocm.Spokes["spoke-b"].AdminConfig)
		By("the canary gets the work, and the other wave waits while the canary is Progressing")
		Eventually(func() error {
			_, err := spokeA.CoreV1().ConfigMaps(ns).Get(ctx, "wave-check", metav1.GetOptions{})
			return err
		}).WithContext(ctx).WithTimeout(90 * time.Second).WithPolling(time.Second).Should(Succeed())
		Consistently(func() error {
			if _, err := hubDyn.Resource(manifestWorkGVR).Namespace("spoke-b").Get(ctx, "wave-check", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("the hub has a ManifestWork for spoke-b: %v", err)
			}
			if _, err := spokeB.CoreV1().ConfigMaps(ns).Get(ctx, "wave-check", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("spoke-b has the ConfigMap: %v", err)
			}
			return nil
		}).WithContext(ctx).WithTimeout(5*time.Second).WithPolling(500*time.Millisecond).Should(Succeed(), "spoke-b gets nothing while the canary is Progressing")
		Expect(workCondition(ctx, hubDyn, "spoke-a", "wave-check", "Progressing")).To(Equal("True"))

		By("the canary is done: its condition rule turns Progressing False, and the next wave starts")
		_, err = spokeA.CoreV1().ConfigMaps(ns).Patch(ctx, "wave-check", types.MergePatchType,
			[]byte(`{"data":{"done":"true"}}`), metav1.PatchOptions{FieldManager: "e2e-canary"})
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() error {
			_, err := spokeB.CoreV1().ConfigMaps(ns).Get(ctx, "wave-check", metav1.GetOptions{})
			return err
		}).WithContext(ctx).WithTimeout(90 * time.Second).WithPolling(time.Second).Should(Succeed())

		By("the canary's status comes back to the hub as status feedback")
		Eventually(func() string {
			return feedbackValue(ctx, hubDyn, "spoke-a", "wave-check", "done")
		}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(time.Second).Should(Equal("true"))
	})

	fleetConfigSpecs(func() *env.OCM { return ocm })
})

// fleetRolloutYAML (with the hub namespace): a Placement of every cluster
// with a canary decision group, and a ManifestWorkReplicaSet rolled out
// group by group whose ConfigMap is Progressing until the spoke marks it
// done (data.done) and Degraded when marked failed.
const fleetRolloutYAML = `apiVersion: v1
kind: Namespace
metadata:
  name: %[1]s
---
apiVersion: cluster.open-cluster-management.io/v1beta2
kind: ManagedClusterSetBinding
metadata:
  name: global
  namespace: %[1]s
spec:
  clusterSet: global
---
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata:
  name: fleet
  namespace: %[1]s
spec:
  clusterSets: [global]
  decisionStrategy:
    groupStrategy:
      clustersPerDecisionGroup: 1
      decisionGroups:
      - groupName: canary
        groupClusterSelector:
          labelSelector:
            matchLabels:
              virt-advisor.kubevirt.io/wave: canary
---
apiVersion: work.open-cluster-management.io/v1alpha1
kind: ManifestWorkReplicaSet
metadata:
  name: wave-check
  namespace: %[1]s
spec:
  placementRefs:
  - name: fleet
    rolloutStrategy:
      type: ProgressivePerGroup
      progressivePerGroup:
        mandatoryDecisionGroups:
        - groupName: canary
  manifestWorkTemplate:
    workload:
      manifests:
      - apiVersion: v1
        kind: Namespace
        metadata:
          name: %[1]s
      - apiVersion: v1
        kind: ConfigMap
        metadata:
          name: wave-check
          namespace: %[1]s
        data:
          wave: check
    manifestConfigs:
    - resourceIdentifier:
        group: ""
        resource: configmaps
        name: wave-check
        namespace: %[1]s
      updateStrategy:
        type: ServerSideApply
      feedbackRules:
      - type: JSONPaths
        jsonPaths:
        - name: done
          path: .data.done
      conditionRules:
      - condition: Progressing
        type: CEL
        celExpressions: ["!has(object.data.done)"]
      - condition: Degraded
        type: CEL
        celExpressions: ["has(object.data.failed)"]
`

// workCondition is the status of a condition of the ManifestWork named
// work in a cluster's namespace on the hub ("" when absent).
func workCondition(ctx context.Context, dyn dynamic.Interface, cluster, work, condition string) string {
	mw, err := dyn.Resource(manifestWorkGVR).Namespace(cluster).Get(ctx, work, metav1.GetOptions{})
	if err != nil {
		return ""
	}
	return fakemco.ConditionStatus(mw, condition)
}

// feedbackValue is a status feedback value (as a string) of a
// ManifestWork on the hub ("" when absent).
func feedbackValue(ctx context.Context, dyn dynamic.Interface, cluster, work, name string) string {
	mw, err := dyn.Resource(manifestWorkGVR).Namespace(cluster).Get(ctx, work, metav1.GetOptions{})
	if err != nil {
		return ""
	}
	manifests, _, _ := unstructured.NestedSlice(mw.Object, "status", "resourceStatus", "manifests")
	for _, m := range manifests {
		values, _, _ := unstructured.NestedSlice(m.(map[string]any), "statusFeedback", "values")
		for _, v := range values {
			v := v.(map[string]any)
			if v["name"] != name {
				continue
			}
			fv, _ := v["fieldValue"].(map[string]any)
			for _, k := range []string{"string", "jsonRaw"} {
				if s, ok := fv[k].(string); ok {
					return s
				}
			}
		}
	}
	return ""
}
