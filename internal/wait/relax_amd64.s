#include "textflag.h"

// func Relax()
TEXT ·Relax(SB),NOSPLIT,$0-0
	PAUSE
	RET
