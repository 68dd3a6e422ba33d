"""The sandbox forge: a fake GitHub on 127.0.0.1, labelled as such.

``server.FakeGitHubServer`` (and ``oauth.FakeGitHubWithOAuth``) put together a state object
(``state``), route tables of functions over it (``issues``, ``events``, ``repos``, ``ci``,
``oauth``; see ``routing``) and an HTTP front end with fault injection and counters
(``frontend``, ``faults``).
"""
