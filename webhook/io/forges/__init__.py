"""Git forges' pull-request APIs (GitHub, GitLab) over an injectable transport, and a fake of each for tests."""
