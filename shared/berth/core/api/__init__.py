"""What the objects are (kube: k8s.io/api, apimachinery): one folder per API group berth reads,
each with its wire Structs, models and normalisation; the kind table; the watch-event codec."""
