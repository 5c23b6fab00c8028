"""Building what students get: stubs and release notebooks from solutions/, the distribution, new exercises, leak scans."""
