#pragma once
#define PAIRMD_VERSION "0.1.0"
