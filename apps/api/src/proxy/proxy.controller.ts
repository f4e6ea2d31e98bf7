import { All, Controller, Post, Req, Res } from '@nestjs/common';
import { ApiExcludeEndpoint, ApiHeader, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { ProxyKeyAuthenticated } from '../auth/auth.decorator';
import { ProxyService } from './proxy.service';

const KEY_HEADER = { name: 'X-Compactor-Key', required: true, description: "The Compactor API key (ingest scope). `Authorization` / `x-api-key` carry the provider's key, passed to the upstream untouched." };
const SESSION_HEADER = {
  name: 'X-Compactor-Session',
  required: false,
  description: "The session that records this conversation (1-128 characters of [A-Za-z0-9._:-]). Without it, the id is derived from the conversation's opening (system prompt and first message).",
};
const POLICY_HEADER = { name: 'X-Compactor-Policy', required: false, description: 'A preset name for a session the proxy creates.' };

/**
 * The drop-in proxy: an agent points its SDK's base URL at `/v1/proxy/anthropic` or
 * `/v1/proxy/openai/v1` and adds `X-Compactor-Key`. Bodies and answers are the providers' own
 * (see their API references); errors the proxy answers itself come in the provider's error shape.
 */
@ApiTags('proxy')
@ProxyKeyAuthenticated()
@Controller('v1/proxy')
export class ProxyController {
  constructor(private readonly proxy: ProxyService) {}

  @Post('anthropic/v1/messages/count_tokens')
  @ApiOperation({ operationId: 'proxyAnthropicCountTokens', summary: "Anthropic's count_tokens, answered locally for the compacted context the proxy would forward: `{ input_tokens }`." })
  @ApiHeader(KEY_HEADER)
  @ApiHeader(SESSION_HEADER)
  @ApiOkResponse({ description: '`{ input_tokens }`' })
  countTokens(@Req() req: Request, @Res() res: Response): Promise<void> {
    return this.proxy.countTokens(req, res);
  }

  @Post('anthropic/v1/messages')
  @ApiOperation({
    operationId: 'proxyAnthropicMessages',
    summary: 'Anthropic Messages through Compactor: new messages recorded, the compacted context forwarded, the answer streamed back unchanged and recorded.',
  })
  @ApiHeader(KEY_HEADER)
  @ApiHeader(SESSION_HEADER)
  @ApiHeader(POLICY_HEADER)
  @ApiOkResponse({ description: "The upstream's answer, byte for byte (JSON, or server-sent events with `stream: true`)." })
  anthropicMessages(@Req() req: Request, @Res() res: Response): Promise<void> {
    return this.proxy.messages('anthropic', req, res);
  }

  @Post('openai/v1/chat/completions')
  @ApiOperation({
    operationId: 'proxyOpenAIChatCompletions',
    summary: 'OpenAI Chat Completions through Compactor: new messages recorded, the compacted context forwarded, the answer streamed back unchanged and recorded.',
  })
  @ApiHeader(KEY_HEADER)
  @ApiHeader(SESSION_HEADER)
  @ApiHeader(POLICY_HEADER)
  @ApiOkResponse({ description: "The upstream's answer, byte for byte (JSON, or server-sent events with `stream: true`)." })
  openaiChatCompletions(@Req() req: Request, @Res() res: Response): Promise<void> {
    return this.proxy.messages('openai', req, res);
  }

  @Post('openai/v1/responses')
  @ApiOperation({
    operationId: 'proxyOpenAIResponses',
    summary:
      "OpenAI Responses through Compactor: new input items recorded, the compacted context forwarded as `input` (with the request's own `instructions`, `tools` and parameters), the answer streamed back unchanged and its output items recorded. Items Compactor does not model (encrypted reasoning, compaction items) are kept whole and forwarded in place. A request chained by `previous_response_id` is forwarded untouched and answered with `X-Compactor-Not-Compacted`: the upstream holds that conversation, so Compactor cannot compact it.",
  })
  @ApiHeader(KEY_HEADER)
  @ApiHeader(SESSION_HEADER)
  @ApiHeader(POLICY_HEADER)
  @ApiOkResponse({ description: "The upstream's answer, byte for byte (JSON, or server-sent `response.*` events with `stream: true`)." })
  openaiResponses(@Req() req: Request, @Res() res: Response): Promise<void> {
    return this.proxy.messages('responses', req, res);
  }

  @All('anthropic/*path')
  @ApiExcludeEndpoint()
  anthropicPassThrough(@Req() req: Request, @Res() res: Response): Promise<void> {
    return this.proxy.passThrough('anthropic', req, res);
  }

  @All('openai/*path')
  @ApiExcludeEndpoint()
  openaiPassThrough(@Req() req: Request, @Res() res: Response): Promise<void> {
    return this.proxy.passThrough('openai', req, res);
  }
}
