package k8s

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
)

// The network policies: toolexec's pods denied everything by default,
// then DNS for every component, Kafka for those that reach a broker, the
// tools for the executor and the reconciler that call them, and into a
// pod only its metrics port from the monitoring namespace (the
// reconciler's /pending lists tenants and keys) and, for the pod serving
// the gateway, its API from the namespaces of its callers.
func TestNetworkPolicies(t *testing.T) {
	forEachOverlay(t, func(t *testing.T, o *objects) {
		if !hasDefaultDeny(o) {
			t.Fatal("no default-deny policy (toolexec's pods, Ingress and Egress, no rules)")
		}
		for n, p := range o.pods() {
			ingress, egress := rulesFor(o, p.Labels)
			if !allowsPort(egress, corev1.ProtocolUDP, 53) {
				t.Errorf("%s: no egress to DNS (UDP 53)", n)
			}
			inv := invoked(t, p.Spec.Containers[0])
			if !embedded(inv) && !allowsPort(egress, corev1.ProtocolTCP, 9093) {
				t.Errorf("%s: no egress to Kafka (TCP 9093)", n)
			}
			if calls := inv.command == "/executor" || inv.command == "/reconciler"; calls && !embedded(inv) && !allowsPort(egress, corev1.ProtocolTCP, 443) {
				t.Errorf("%s: no egress to the tools (HTTPS)", n)
			}
			checkIngress(t, n, p, ingress)
		}
	})
}

// hasDefaultDeny: a policy with no rule, for Ingress and Egress, that
// selects app.kubernetes.io/part-of: toolexec and nothing more.
func hasDefaultDeny(o *objects) bool {
	for _, p := range o.policies {
		sel := p.Spec.PodSelector
		if len(sel.MatchLabels) == 1 && sel.MatchLabels[labelPartOf] == "toolexec" && len(sel.MatchExpressions) == 0 &&
			len(p.Spec.PolicyTypes) == 2 && len(p.Spec.Ingress) == 0 && len(p.Spec.Egress) == 0 {
			return true
		}
	}
	return false
}

// rulesFor collects the ingress and egress rules of every policy that
// selects pods with lbls.
func rulesFor(o *objects, lbls map[string]string) ([]networkingv1.NetworkPolicyIngressRule, []networkingv1.NetworkPolicyEgressRule) {
	var in []networkingv1.NetworkPolicyIngressRule
	var out []networkingv1.NetworkPolicyEgressRule
	for _, p := range o.policies {
		if sel := p.Spec.PodSelector; selects(&sel, lbls) {
			in = append(in, p.Spec.Ingress...)
			out = append(out, p.Spec.Egress...)
		}
	}
	return in, out
}

func allowsPort(rules []networkingv1.NetworkPolicyEgressRule, proto corev1.Protocol, port int32) bool {
	for _, r := range rules {
		if hasPort(r.Ports, proto, port) {
			return true
		}
	}
	return false
}

// hasPort: a port of ports, or a range (endPort), admits port.
func hasPort(ports []networkingv1.NetworkPolicyPort, proto corev1.Protocol, port int32) bool {
	for _, p := range ports {
		if p.Port == nil || (p.Protocol != nil && *p.Protocol != proto) {
			continue
		}
		first, last := int32(p.Port.IntValue()), int32(p.Port.IntValue())
		if p.EndPort != nil {
			last = *p.EndPort
		}
		if first <= port && port <= last {
			return true
		}
	}
	return false
}

// checkIngress: every rule reaching pod names its sources and ports; its
// metrics port is open to the monitoring namespace; and only the pod
// serving the gateway (its container port named http) takes anything
// from elsewhere, on that port only.
func checkIngress(t *testing.T, n string, p *corev1.PodTemplateSpec, rules []networkingv1.NetworkPolicyIngressRule) {
	t.Helper()
	ports := map[string]int32{}
	for _, cp := range p.Spec.Containers[0].Ports {
		ports[cp.Name] = cp.ContainerPort
	}
	monitored := false
	for _, r := range rules {
		if len(r.From) == 0 || len(r.Ports) == 0 {
			t.Errorf("%s: an ingress rule open to any source or port: %+v", n, r)
			continue
		}
		fromMonitoring := len(r.From) == 1 && namespaceIs(r.From[0], "monitoring")
		monitored = monitored || (fromMonitoring && hasPort(r.Ports, corev1.ProtocolTCP, ports["metrics"]))
		if api, ok := ports["http"]; !fromMonitoring && (!ok || len(r.Ports) != 1 || !hasPort(r.Ports, corev1.ProtocolTCP, api)) {
			t.Errorf("%s: ingress from %+v on %+v: only the gateway's API port takes traffic from outside monitoring", n, r.From, r.Ports)
		}
	}
	if _, ok := ports["metrics"]; ok && !monitored {
		t.Errorf("%s: its metrics port %d is not open to the monitoring namespace", n, ports["metrics"])
	}
}

func namespaceIs(peer networkingv1.NetworkPolicyPeer, name string) bool {
	return peer.PodSelector == nil && peer.IPBlock == nil && peer.NamespaceSelector != nil &&
		selects(peer.NamespaceSelector, map[string]string{corev1.LabelMetadataName: name})
}
