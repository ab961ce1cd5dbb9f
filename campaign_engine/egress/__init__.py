"""Safe egress: the one HTTP client that may reach a user-supplied URL (receivers' webhooks, SNS
certificates). Base layer, so delivery and feedback both use it without importing each other."""
