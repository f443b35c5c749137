"""core/v1 and storage.k8s.io: Pod, Node, PV, PVC, Namespace, Service, ResourceQuota, StorageClass,
CSIDriver, CSINode, CSIStorageCapacity, VolumeAttachment; a pod's requests as kube counts them."""
