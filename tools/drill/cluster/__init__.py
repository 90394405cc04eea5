"""The cluster drill's machinery (`manage.py cluster_drill`): hosts made of network and mount
namespaces on a bridge of their own (network.py), the services and Slotwise processes each runs
(hosts.py), the HTTP client that drives the product as a user would (browser.py), and the cases
(cases.py)."""
