// runtime/common/status.h: the internal name of the public hvd/status.h (one definition of
// Status for the libraries and the API, so nothing converts between two error types).
#pragma once

#include "hvd/status.h"
