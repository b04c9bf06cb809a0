"""mambasizer: SGLang 0.5.23 start-up sizing for hybrid LLMs, as a service.

The code lives in the repository's top-level service/ and schemas/ directories; this
package holds them under one distinctive import name (mambasizer.service,
mambasizer.schemas) through two relative symlinks, which the wheel turns into real
subpackages.
"""
