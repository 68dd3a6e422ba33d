"""GitLab through python-gitlab: the small slice the ``gitlab.issue_create`` kind needs."""
