"""The web console (``/ui/`` on the control API's port) and the HTML report of a test: what Kafka saw, shown
from the cluster's own state and journal.  Pages are rendered on the server from that state when a browser asks
(nothing runs while no page is open); everything a client chose is escaped (mockbroker.console.markup)."""
